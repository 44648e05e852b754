/**
 * The delivery handler's read-ahead (`DeliveryHandler.prefetch`) on real PostgreSQL and a real
 * local HTTP receiver: the consumer asks it to read the next message of a key while the key's
 * current provider call runs. What it must never do is let a stale read decide a delivery.
 */
import { ManualClock } from '@notify/runtime/testing';
import { buildDeliveryRequest, type MessageSubject } from '@notify/contract';
import { enqueue, type Notification } from '@notify/outbox';
import { silentLogger } from '@notify/runtime';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import {
  createDeliveryHandler,
  createDispatcherEvents,
  createNotificationLoader,
  dispatcherConfig,
  type ContentPreparer,
  type InboundMessage,
} from '../src/index.js';
import { plainContent } from '../src/testing/index.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { startReceiver, type Receiver } from './support/receiver.js';

const retry = { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 3_600_000 };
const config = dispatcherConfig({ topicPrefix: 'p', retry, sendTimeoutMs: 5_000, maxInFlight: 4, repairAfterMs: 60_000 });

let tdb: TestDatabase;
let receiver: Receiver;
beforeAll(async () => {
  tdb = await createTestDatabase();
  receiver = await startReceiver(async () => ({ status: 200 }));
});
afterAll(async () => {
  await receiver.close();
  await tdb.close();
});

function setup() {
  const clock = new ManualClock(new Date());
  const loads: string[] = [];
  const prepares: string[] = [];
  const loader = createNotificationLoader(tdb.db, { maxBatch: 16, delayMs: 0 });
  const plain = plainContent();
  const content: ContentPreparer = {
    prepare: (n, attempt) => {
      prepares.push(n.id);
      return plain.prepare(n, attempt);
    },
  };
  const handler = createDeliveryHandler({
    db: tdb.db,
    providers: { webhook: createHttpTestProvider(() => clock.now()) },
    content,
    clock,
    logger: silentLogger,
    events: createDispatcherEvents(silentLogger),
    config,
    notifications: {
      load: (id) => {
        loads.push(id);
        return loader.load(id);
      },
    },
  });
  const add = async () => {
    const { notification } = await enqueue(
      tdb.db,
      { tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/hot`, body: 'hi' },
      { now: clock.now(), maxAttempts: retry.maxAttempts, defaultTtlMs: retry.defaultTtlMs },
    );
    return notification;
  };
  const message = (n: MessageSubject): InboundMessage => {
    const m = buildDeliveryRequest(n, 1, clock.now());
    return { topic: 'p.requests', partition: 0, offset: '0', key: Buffer.from(m.key), value: Buffer.from(m.value), headers: m.headers };
  };
  const run = (m: InboundMessage) => handler(m, new AbortController().signal);
  const sentTo = (n: Notification) => receiver.received.filter((r) => r.id === n.id).length;
  return { clock, handler, loads, prepares, add, message, run, sentTo };
}

describe('delivery handler read-ahead (prefetch)', () => {
  it("reads the next message's notification and content ahead, once, and delivers it from that read", async () => {
    const s = setup();
    const first = await s.add();
    const second = await s.add();
    const m1 = s.message(first);
    const m2 = s.message(second);
    s.handler.prefetch(m2); // as the consumer does when the key's current delivery (m1) starts
    expect(await s.run(m1)).toMatchObject({ kind: 'recorded', plan: { to: 'sent' } });
    expect(await s.run(m2)).toMatchObject({ kind: 'recorded', plan: { to: 'sent' } });
    // The second notification was read and prepared once, by the prefetch, before the first's turn.
    expect(s.loads).toEqual([second.id, first.id]);
    expect(s.prepares).toEqual([second.id, first.id]);
    expect(s.sentTo(first)).toBe(1);
    expect(s.sentTo(second)).toBe(1);
  });

  it('does not use a read ahead for a notification that another delivery handled in between (no second call)', async () => {
    const s = setup();
    const n = await s.add();
    const original = s.message(n);
    const duplicate = s.message(n); // a redelivery of the same notification, queued behind it
    s.handler.prefetch(duplicate);
    expect(await s.run(original)).toMatchObject({ kind: 'recorded', plan: { to: 'sent' } });
    // The prefetched read saw the notification queued; the duplicate reads again and sees it sent.
    expect(await s.run(duplicate)).toMatchObject({ kind: 'skipped', reason: 'terminal' });
    expect(s.sentTo(n)).toBe(1);
    expect(s.loads).toEqual([n.id, n.id, n.id]);
  });

  it('does not read ahead while a delivery of the same notification runs', async () => {
    const s = setup();
    const n = await s.add();
    const original = s.message(n);
    const running = s.run(original);
    s.handler.prefetch(s.message(n));
    await running;
    expect(s.loads).toEqual([n.id]);
  });

  it('reads again when the read ahead is older than 1 s (a cancel in between is honoured)', async () => {
    const s = setup();
    const n = await s.add();
    const m = s.message(n);
    s.handler.prefetch(m);
    // Let the prefetched read finish, then cancel the notification behind its back.
    await expect.poll(() => s.prepares.length).toBe(1);
    await sql`UPDATE notifications SET state = 'cancelled', next_attempt_at = NULL, updated_at = now() WHERE id = ${n.id}`.execute(tdb.db);
    s.clock.advance(1_001);
    expect(await s.run(m)).toMatchObject({ kind: 'skipped', reason: 'terminal' });
    expect(s.sentTo(n)).toBe(0);
    expect(s.loads).toEqual([n.id, n.id]);
  });
});
