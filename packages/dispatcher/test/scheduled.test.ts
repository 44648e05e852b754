/**
 * Scheduled send on real Kafka and the wall clock: a notification with `send_at` waits in
 * PostgreSQL, the schedule service releases it onto a delay topic shortly before, and the
 * receiver never sees it before `send_at`. A cancelled scheduled notification is never sent.
 *
 * Tolerance: lateness is asserted below 5 s (a gross-stall detector on a shared 2-core machine);
 * the measured values are printed.
 */
import { buildDeliveryRequest } from '@notify/contract';
import { fromKysely, outboxInsert } from '@notify/outbox';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { stateOf, startHarness, type Harness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { startReceiver, type Receiver } from './support/receiver.js';

let h: Harness | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

describe('scheduled send', () => {
  it('delivers nothing before send_at, and a cancelled scheduled notification never', async () => {
    h = await startHarness({ partitions: 2, retry: { baseDelayMs: 200, maxDelayMs: 2000 }, dispatcher: { scheduleIntervalMs: 200 } });
    receiver = await startReceiver(() => ({ status: 200 }));
    const start = Date.now();
    const sendAt = new Map<string, number>();
    for (let i = 0; i < 6; i++) {
      const at = new Date(start + 1500 + i * 400);
      const id = await h.enqueue({
        tenant_id: 't1',
        channel: 'webhook',
        to: `${receiver.url}/s/${i}`,
        body: `n${i}`,
        send_at: at.toISOString(),
      });
      sendAt.set(id, at.getTime());
    }
    const now = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/now`, body: 'now' });
    const cancelled = await h.enqueue({
      tenant_id: 't1',
      channel: 'webhook',
      to: `${receiver.url}/cancelled`,
      body: 'never',
      send_at: new Date(start + 2000).toISOString(),
    });
    const held = await stateOf(h, cancelled);
    expect(held).toMatchObject({ state: 'queued' });
    expect(held.next_attempt_at).toEqual(new Date(start + 2000));
    // cancelled as the API's cancel does it (state and next_attempt_at; held_until is left, as there)
    await h.db.db
      .updateTable('notifications')
      .set({ state: 'cancelled', next_attempt_at: null, updated_at: new Date() })
      .where('id', '=', cancelled)
      .execute();

    const d = await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.received.length >= 7, { timeoutMs: 30_000, message: 'the 7 notifications delivered' });
    expect(r.received.find((x) => x.id === now)).toBeDefined();
    const margins = r.received.filter((x) => sendAt.has(x.id)).map((x) => x.at - sendAt.get(x.id)!);
    expect(margins).toHaveLength(6);
    expect(Math.min(...margins)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...margins)).toBeLessThan(5000);
    console.log(`scheduled send lateness over ${margins.length}: min ${Math.min(...margins)} ms, max ${Math.max(...margins)} ms`);
    // give the cancelled one's send_at time to pass, then check it was never delivered
    await waitFor(() => Date.now() > start + 3000, { timeoutMs: 10_000 });
    await d.releaseScheduledNow();
    const requests = await h.db.db
      .selectFrom('outbox')
      .select('topic')
      .where(sql`headers->>'notification-id'`, '=', cancelled)
      .where('topic', '<>', 'events')
      .execute();
    expect(requests).toEqual([]);
    expect(r.received.find((x) => x.id === cancelled)).toBeUndefined();
    expect((await stateOf(h, cancelled)).state).toBe('cancelled');
  });

  it('does not start a scheduled notification early for a stray request on the request topic', async () => {
    h = await startHarness({ dispatcher: { scheduleIntervalMs: 200 } });
    receiver = await startReceiver(() => ({ status: 200 }));
    const sendAt = Date.now() + 3000;
    const id = await h.enqueue({
      tenant_id: 't1',
      channel: 'webhook',
      to: `${receiver.url}/s`,
      body: 'x',
      send_at: new Date(sendAt).toISOString(),
    });
    // attempt 1, due now, as a hand-made message (or another writer's mistake) would say
    await outboxInsert(fromKysely(h.db.db), { messages: [buildDeliveryRequest(await stateOf(h, id), 1, new Date())] });
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    const hh = h;
    const r = receiver;
    await waitFor(() => hh.seen.skipped.some((x) => x.notificationId === id && x.reason === 'early'), {
      timeoutMs: 20_000,
      message: 'the stray request skipped',
    });
    await waitFor(() => r.received.length >= 1, { timeoutMs: 20_000, message: 'the notification delivered at send_at' });
    expect(r.received.map((x) => x.id)).toEqual([id]);
    expect(r.received[0]!.at).toBeGreaterThanOrEqual(sendAt);
    // The outcome is written after the receiver answered (the outcome writer batches): wait for it.
    await waitFor(async () => (await stateOf(hh, id)).state === 'sent', { timeoutMs: 10_000, message: 'the attempt recorded as sent' });
    expect(await stateOf(h, id)).toMatchObject({ state: 'sent', attempts: 1 });
  });
});
