/**
 * The delivery handler on real PostgreSQL and a real local HTTP receiver (no Kafka): every path
 * of one message, the guarded write-back, the CHECK constraints, and the trace id in log lines.
 */
import { ManualClock } from '@notify/runtime/testing';
import { buildDeliveryRequest, type MessageSubject } from '@notify/contract';
import { enqueue, fromPgClient, type NotificationIntent } from '@notify/outbox';
import { silentLogger, type Logger } from '@notify/runtime';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import {
  compose,
  createDeliveryHandler,
  createDispatcherEvents,
  deadLetter,
  dispatcherConfig,
  recordOutcome,
  planOutcome,
  tracing,
  type ContentPreparer,
  type HandleResult,
  type InboundMessage,
} from '../src/index.js';
import type { Provider } from '@notify/providers';
import { createMemoryDeadLetterSink, plainContent } from '../src/testing/index.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { gate, startReceiver, type Receiver } from './support/receiver.js';

const retry = { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 3_600_000 };
// 2 s, not 200 ms: beside a chaos run (load 20) a local receiver's answer took longer than 200 ms.
const config = dispatcherConfig({ topicPrefix: 'h', retry, sendTimeoutMs: 2_000, maxInFlight: 4, repairAfterMs: 60_000 });

let tdb: TestDatabase;
let receiver: Receiver;
const hold = gate();
beforeAll(async () => {
  tdb = await createTestDatabase();
  receiver = await startReceiver(async (r) => {
    if (r.path === '/hang') await hold.promise;
    if (r.path === '/503') return { status: 503 };
    if (r.path === '/404') return { status: 404 };
    return { status: 200 };
  });
});
afterAll(async () => {
  hold.open();
  await receiver.close();
  await tdb.close();
});

interface Captured {
  readonly msg: string | undefined;
  readonly fields: Record<string, unknown>;
}
function capturingLogger(lines: Captured[], bindings: Record<string, unknown> = {}): Logger {
  const write = (obj: object, msg?: string) => lines.push({ msg, fields: { ...bindings, ...obj } });
  return { error: write, warn: write, info: write, debug: write, child: (b) => capturingLogger(lines, { ...bindings, ...b }) };
}

function setup(
  options: { content?: ContentPreparer; providers?: Partial<Record<'webhook' | 'email' | 'sms', Provider>>; logger?: Logger } = {},
) {
  const clock = new ManualClock(new Date());
  const events = createDispatcherEvents(silentLogger);
  const dlq = createMemoryDeadLetterSink();
  const logger = options.logger ?? silentLogger;
  const handler = compose(
    tracing(),
    deadLetter(dlq, { events, logger }),
  )(
    createDeliveryHandler({
      db: tdb.db,
      providers: options.providers ?? { webhook: createHttpTestProvider(() => clock.now()) },
      content: options.content ?? plainContent(),
      clock,
      logger,
      events,
      config,
    }),
  );
  const add = async (path: string, extra: Partial<NotificationIntent> = {}) => {
    const { notification } = await enqueue(
      tdb.db,
      { tenant_id: 't1', channel: 'webhook', to: `${receiver.url}${path}`, body: 'hi', ...extra },
      { now: clock.now(), maxAttempts: retry.maxAttempts, defaultTtlMs: retry.defaultTtlMs },
    );
    return notification;
  };
  const message = (n: MessageSubject, attempt = 1, due = clock.now()): InboundMessage => {
    const m = buildDeliveryRequest(n, attempt, due);
    return { topic: 'h.requests', partition: 0, offset: '0', key: Buffer.from(m.key), value: Buffer.from(m.value), headers: m.headers };
  };
  const run = (m: InboundMessage) => handler(m, new AbortController().signal);
  const row = (id: string) => tdb.db.selectFrom('notifications').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  return { clock, events, dlq, add, message, run, row };
}

describe('delivery handler', () => {
  it('sends, records the attempt, clears the error and writes the status event in one transaction', async () => {
    const s = setup();
    const n = await s.add('/ok');
    const result = await s.run(s.message(n));
    expect(result).toMatchObject({ kind: 'recorded', plan: { to: 'sent', attemptOutcome: 'sent', providerStatus: '200' } });
    const row = await s.row(n.id);
    expect(row).toMatchObject({ state: 'sent', attempts: 1, last_error: null, next_attempt_at: null, dead_reason: null });
    expect(row.sent_at).toEqual(s.clock.now());
    const events = await sql<{
      value: string;
    }>`SELECT value FROM outbox_messages WHERE topic = 'events' AND headers->>'notification-id' = ${n.id} ORDER BY id, part`.execute(
      tdb.db,
    );
    expect(events.rows.map((e) => JSON.parse(e.value).type)).toEqual(['notification.queued', 'notification.sent']);
  });

  it('skips a redelivered message (attempt done, or terminal) and writes nothing', async () => {
    const s = setup();
    const n = await s.add('/ok');
    await s.run(s.message(n));
    const before = await sql<{ n: string }>`SELECT count(*) AS n FROM outbox`.execute(tdb.db);
    expect(await s.run(s.message(n))).toMatchObject({ kind: 'skipped', reason: 'terminal' });
    const retrying = await s.add('/503');
    await s.run(s.message(retrying));
    expect(await s.run(s.message(retrying))).toMatchObject({ kind: 'skipped', reason: 'attempt-done' });
    const after = await sql<{ n: string }>`SELECT count(*) AS n FROM outbox`.execute(tdb.db);
    // Only the second notification's rows: its request (carrying its queued event), then its retry event and retry request.
    expect(Number(after.rows[0]?.n)).toBe(Number(before.rows[0]?.n) + 3);
  });

  it('schedules a transient failure on its delay tier and ends dead, exhausted, at the attempt cap', async () => {
    const s = setup();
    const n = await s.add('/503');
    expect(await s.run(s.message(n))).toMatchObject({ kind: 'recorded', plan: { to: 'queued', retryTopic: 'retry.1s', delayMs: 1000 } });
    const retryRow = await sql<{
      topic: string;
      value: string;
    }>`SELECT topic, value FROM outbox WHERE topic LIKE 'retry.%' AND headers->>'notification-id' = ${n.id}`.execute(tdb.db);
    expect(retryRow.rows).toHaveLength(1);
    expect(JSON.parse(retryRow.rows[0]?.value ?? '{}')).toMatchObject({
      attempt: 2,
      due_at: new Date(s.clock.now().getTime() + 1000).toISOString(),
    });
    // Early (the clock has not moved): refused, nothing written.
    expect(await s.run(s.message(n, 2, new Date(s.clock.now().getTime() + 1000)))).toMatchObject({ kind: 'not-due' });
    s.clock.advance(1000);
    await s.run(s.message(n, 2));
    s.clock.advance(2000);
    expect(await s.run(s.message(n, 3))).toMatchObject({ kind: 'recorded', plan: { to: 'dead', deadReason: 'exhausted' } });
    expect(await s.row(n.id)).toMatchObject({
      state: 'dead',
      dead_reason: 'exhausted',
      attempts: 3,
      last_error: 'receiver returned 503',
      next_attempt_at: null,
    });
  });

  it('ends dead at once on a permanent answer, on suppression and on broken content, the last two without calling the provider', async () => {
    const s = setup();
    const gone = await s.add('/404');
    expect(await s.run(s.message(gone))).toMatchObject({ kind: 'recorded', plan: { to: 'dead', deadReason: 'permanent' } });

    const calls = receiver.received.length;
    const optedOut = setup({ content: { prepare: async () => ({ kind: 'suppressed', reason: 'recipient opted out of webhook' }) } });
    const n1 = await optedOut.add('/ok');
    expect(await optedOut.run(optedOut.message(n1))).toMatchObject({
      kind: 'recorded',
      plan: { to: 'dead', deadReason: 'suppressed', attemptOutcome: 'suppressed' },
    });
    const broken = setup({ content: { prepare: async () => ({ kind: 'permanent', error: 'template "welcome" has no variable "name"' }) } });
    const n2 = await broken.add('/ok');
    expect(await broken.run(broken.message(n2))).toMatchObject({
      kind: 'recorded',
      plan: { to: 'dead', deadReason: 'permanent', lastError: 'template "welcome" has no variable "name"' },
    });
    expect(receiver.received.length).toBe(calls);

    const down = setup({
      content: {
        prepare: async () => {
          throw new Error('connection refused');
        },
      },
    });
    const n3 = await down.add('/ok');
    expect(await down.run(down.message(n3))).toMatchObject({
      kind: 'recorded',
      plan: { to: 'queued', lastError: 'content preparation failed: connection refused' },
    });
  });

  it('skips a message that would start an attempt before the row says it is due (a stray request for a scheduled send)', async () => {
    const s = setup();
    const sendAt = new Date(s.clock.now().getTime() + 3_600_000);
    const n = await s.add('/ok', { send_at: sendAt.toISOString() });
    const calls = receiver.received.length;
    const count = async () => Number((await sql<{ n: string }>`SELECT count(*) AS n FROM outbox`.execute(tdb.db)).rows[0]?.n);
    const rows = await count();
    // held (no request written yet), then released onto a delay topic (held_until cleared, as the schedule service does)
    expect(await s.run(s.message(n))).toMatchObject({ kind: 'skipped', reason: 'early' });
    await tdb.db.updateTable('notifications').set({ held_until: null }).where('id', '=', n.id).execute();
    s.clock.set(sendAt.getTime() - 1_001);
    expect(await s.run(s.message(n))).toMatchObject({ kind: 'skipped', reason: 'early' });
    expect(receiver.received.length).toBe(calls);
    expect(await count()).toBe(rows);
    expect(await s.row(n.id)).toMatchObject({ state: 'queued', attempts: 0, next_attempt_at: sendAt });
    // the request the schedule service writes (due at send_at) starts it on time
    s.clock.set(sendAt);
    expect(await s.run(s.message(n, 1, sendAt))).toMatchObject({ kind: 'recorded', plan: { to: 'sent' } });
    expect(receiver.received.length).toBe(calls + 1);
  });

  it('ends dead, expired, without a call once the expiry has passed', async () => {
    const s = setup();
    const n = await s.add('/ok', { ttl_seconds: 5 });
    s.clock.advance(5000);
    const calls = receiver.received.length;
    expect(await s.run(s.message(n))).toMatchObject({
      kind: 'recorded',
      plan: { to: 'dead', deadReason: 'expired', attemptOutcome: 'expired' },
    });
    expect(receiver.received.length).toBe(calls);
    const attempt = await tdb.db.selectFrom('attempts').selectAll().where('notification_id', '=', n.id).executeTakeFirstOrThrow();
    expect(attempt.outcome).toBe('expired');
  });

  it('times a hanging provider out as a transient failure', async () => {
    const s = setup();
    const n = await s.add('/hang');
    const result = await s.run(s.message(n));
    expect(result).toMatchObject({ kind: 'recorded', plan: { to: 'queued', attemptOutcome: 'transient', lastError: 'timeout' } });
  });

  it('fails a channel without a provider permanently', async () => {
    const s = setup({ providers: {} });
    const n = await s.add('/ok');
    expect(await s.run(s.message(n))).toMatchObject({
      kind: 'recorded',
      plan: { to: 'dead', deadReason: 'permanent', lastError: 'no provider is configured for channel webhook' },
    });
  });

  it('dead-letters unknown ids, mismatched tenants and attempts from the future', async () => {
    const s = setup();
    const n = await s.add('/ok');
    const unknown = s.message({ ...n, id: 'ntf_01KZZZZZZZZZZZZZZZZZZZZZZZ' });
    expect(await s.run(unknown)).toEqual({
      kind: 'dead-lettered',
      code: 'unknown_notification',
      reason: 'unknown notification ntf_01KZZZZZZZZZZZZZZZZZZZZZZZ',
    });
    expect(await s.run(s.message({ ...n, tenant_id: 'other' }))).toMatchObject({
      kind: 'dead-lettered',
      code: 'mismatch',
      reason: expect.stringMatching(/does not match/),
    });
    expect(await s.run(s.message(n, 2))).toMatchObject({
      kind: 'dead-lettered',
      code: 'attempt_ahead',
      reason: expect.stringMatching(/ahead/),
    });
    expect(s.dlq.letters.map((l) => l.headers['dlq-reason'])).toHaveLength(3);
    expect((await s.row(n.id)).state).toBe('queued');
  });

  it('lets exactly one of two concurrent deliveries of the same attempt record it', async () => {
    const s = setup();
    const n = await s.add('/ok');
    const results: HandleResult[] = await Promise.all([s.run(s.message(n)), s.run(s.message(n))]);
    expect(results.filter((r) => r.kind === 'recorded')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'skipped')).toHaveLength(1);
    const attempts = await tdb.db.selectFrom('attempts').selectAll().where('notification_id', '=', n.id).execute();
    expect(attempts).toHaveLength(1);
  });

  it('writes nothing when the guard does not match', async () => {
    const s = setup();
    const n = await s.add('/ok');
    const plan = planOutcome({
      notification: n,
      attempt: 1,
      result: { kind: 'sent' },
      now: s.clock.now(),
      retry,
      tiers: config.tiers,
      random: Math.random,
    });
    const exec = fromPgClient(tdb.pool);
    expect(await recordOutcome(exec, { notification: n, plan, startedAt: s.clock.now(), finishedAt: s.clock.now() })).toBe(true);
    expect(await recordOutcome(exec, { notification: n, plan, startedAt: s.clock.now(), finishedAt: s.clock.now() })).toBe(false);
    expect(await tdb.db.selectFrom('attempts').selectAll().where('notification_id', '=', n.id).execute()).toHaveLength(1);
  });

  it('puts the trace id of the request that created the notification in its log lines', async () => {
    const lines: Captured[] = [];
    const s = setup({ logger: capturingLogger(lines) });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const n = await s.add('/ok', { traceparent: `00-${traceId}-00f067aa0ba902b7-01` });
    await s.run(s.message(n));
    const sent = lines.find((l) => l.msg === 'notification sent');
    expect(sent?.fields).toMatchObject({ notificationId: n.id, traceId, attempt: 1, providerStatus: '200' });
    // Ids and status codes only: never the recipient or the body.
    expect(JSON.stringify(lines)).not.toContain(receiver.url);
    expect(JSON.stringify(lines)).not.toContain('"hi"');
  });
});
