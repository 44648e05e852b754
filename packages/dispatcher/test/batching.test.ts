/**
 * The dispatcher's batched database work on real PostgreSQL: group commit of outcomes (one
 * transaction for many deliveries, each still guarded and answered on its own, a refused row
 * isolated), and batched reads (notifications, opt-outs) that answer each request as a single
 * query would.
 */
import { ManualClock } from '@notify/runtime/testing';
import { enqueue, fromKysely, type Notification } from '@notify/outbox';
import { silentLogger } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import { Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import {
  createContentPreparer,
  createDeliveryHandler,
  createDispatcherEvents,
  createNotificationLoader,
  createOutcomeWriter,
  dispatcherConfig,
  planOutcome,
  recordOutcome,
  recordOutcomes,
  suppressionInsert,
  suppressionMatch,
  type DispatcherEventMap,
  type HandleResult,
  type InboundMessage,
  type OutcomeFlush,
  type RecordOutcomeParams,
} from '../src/index.js';
import { createScriptedProvider, plainContent } from '../src/testing/index.js';
import { buildDeliveryRequest } from '@notify/contract';
import { deliveryOptOut } from '../src/sql/notification-get-many.js';

const retry = { maxAttempts: 3, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 3_600_000 };
const config = dispatcherConfig({ topicPrefix: 'b', retry, sendTimeoutMs: 2000, maxInFlight: 8, repairAfterMs: 60_000 });

let tdb: TestDatabase;
/** A second Kysely on the test database that counts the statements sent through it. */
let counted: Kysely<Database>;
let countedPool: pg.Pool;
const statements: string[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  countedPool = new pg.Pool({ connectionString: tdb.url, max: 4 });
  countedPool.on('error', () => {});
  counted = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: countedPool }),
    log: (event) => {
      if (event.level === 'query') statements.push(event.query.sql);
    },
  });
});
afterAll(async () => {
  await counted.destroy();
  await tdb.close();
});

const clock = new ManualClock('2026-05-01T12:00:00Z');
let seq = 0;
async function add(extra: { category?: string; to?: string; channel?: 'webhook' | 'email' } = {}): Promise<Notification> {
  const { notification } = await enqueue(
    tdb.db,
    {
      tenant_id: 't1',
      channel: extra.channel ?? 'webhook',
      to: extra.to ?? `https://example.com/hook/${++seq}`,
      body: 'hi',
      ...(extra.category ? { category: extra.category } : {}),
    },
    { now: clock.now(), maxAttempts: retry.maxAttempts, defaultTtlMs: retry.defaultTtlMs },
  );
  return notification;
}

function outcome(n: Notification, result: 'sent' | 'transient', attempt = 1): RecordOutcomeParams {
  const now = clock.now();
  const plan = planOutcome({
    notification: n,
    attempt,
    result:
      result === 'sent'
        ? { kind: 'sent', providerStatus: '200' }
        : { kind: 'transient', error: 'receiver returned 503', providerStatus: '503' },
    now,
    retry,
    tiers: config.tiers,
    random: () => 0.5,
  });
  return { notification: n, plan, startedAt: now, finishedAt: now };
}

/** The outbox rows written for a notification after enqueue (which wrote one: its request, carrying its `queued` event). */
async function outboxAfterEnqueue(id: string) {
  const { rows } = await sql<{ id: string; topic: string; type: string | null; txid: string }>`
    SELECT id, topic, value::jsonb->>'type' AS type, txid::text AS txid FROM outbox
     WHERE headers->>'notification-id' = ${id} ORDER BY id`.execute(tdb.db);
  return rows.slice(1);
}

describe('group commit of outcomes (recordOutcomes, createOutcomeWriter)', () => {
  it('writes many outcomes in one transaction; a row whose guard fails writes nothing, the others are written with their outbox rows in order', async () => {
    const [a, b, c] = [await add(), await add(), await add()] as [Notification, Notification, Notification];
    const exec = fromKysely(tdb.db);
    // b's attempt 1 is already recorded (another delivery won): its row in the group is a duplicate.
    expect(await recordOutcome(exec, outcome(b, 'sent'))).toBe(true);

    expect(await recordOutcomes(exec, [outcome(a, 'sent'), outcome(b, 'sent'), outcome(c, 'transient')])).toEqual([true, false, true]);

    const rows = await tdb.db
      .selectFrom('notifications')
      .select(['id', 'state', 'attempts', 'next_attempt_at', 'sent_at'])
      .where('id', 'in', [a.id, b.id, c.id])
      .execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(a.id)).toMatchObject({ state: 'sent', attempts: 1, sent_at: clock.now() });
    expect(byId.get(c.id)).toMatchObject({ state: 'queued', attempts: 1, next_attempt_at: new Date(clock.now().getTime() + 1000) });
    const attempts = await tdb.db
      .selectFrom('attempts')
      .select(['notification_id', 'attempt', 'outcome'])
      .where('notification_id', 'in', [a.id, b.id, c.id])
      .execute();
    expect(attempts).toHaveLength(3); // a, c, and b's earlier one only

    const [outA, outB, outC] = [await outboxAfterEnqueue(a.id), await outboxAfterEnqueue(b.id), await outboxAfterEnqueue(c.id)];
    expect(outA.map((r) => r.type)).toEqual(['notification.sent']);
    expect(outB.map((r) => r.type)).toEqual(['notification.sent']); // from its own earlier transaction, none from the group
    expect(outC.map((r) => [r.topic, r.type])).toEqual([
      ['events', 'notification.retry_scheduled'],
      ['retry.1s', 'notification.deliver'],
    ]);
    // One transaction for the group, and not b's.
    expect(new Set([...outA, ...outC].map((r) => r.txid)).size).toBe(1);
    expect(outB[0]?.txid).not.toBe(outA[0]?.txid);
  });

  it('writes a group exactly as single transactions would: same rows and messages as recordOutcome', async () => {
    const [x, y] = [await add(), await add()] as [Notification, Notification];
    const exec = fromKysely(tdb.db);
    expect(await recordOutcome(exec, outcome(x, 'transient'))).toBe(true);
    expect(await recordOutcomes(exec, [outcome(y, 'transient')])).toEqual([true]);
    const strip = async (id: string) => {
      const n = await tdb.db
        .selectFrom('notifications')
        .select(['state', 'attempts', 'last_error', 'next_attempt_at', 'dead_reason', 'updated_at'])
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      const a = await tdb.db
        .selectFrom('attempts')
        .select(['attempt', 'outcome', 'error', 'provider_status', 'started_at', 'finished_at'])
        .where('notification_id', '=', id)
        .execute();
      const o = (await outboxAfterEnqueue(id)).map((r) => [r.topic, r.type]);
      return { n, a, o };
    };
    expect(await strip(y.id)).toEqual(await strip(x.id));
  });

  it('stores texts exactly as recordOutcome does: quotes, backslashes, line breaks, non-ASCII, and a lone surrogate as U+FFFD', async () => {
    const to = `https://example.com/hook/texts-${++seq}`; // one recipient: the same message key
    const [x, y] = [await add({ to }), await add({ to })] as [Notification, Notification];
    const exec = fromKysely(tdb.db);
    // A provider reply cut in the middle of a surrogate pair ends in a lone high surrogate.
    const error = 'receiver said "no" \\ C:\\path\n\ttab ✓ é \uD83D';
    const failed = (n: Notification): RecordOutcomeParams => {
      const now = clock.now();
      const plan = planOutcome({
        notification: n,
        attempt: 1,
        result: { kind: 'transient', error, providerStatus: '5"03\\' },
        now,
        retry,
        tiers: config.tiers,
        random: () => 0.5,
      });
      return { notification: n, plan, startedAt: now, finishedAt: now };
    };
    expect(await recordOutcome(exec, failed(x))).toBe(true);
    expect(await recordOutcomes(exec, [failed(y)])).toEqual([true]);
    const stored = async (n: Notification) => {
      const row = await tdb.db.selectFrom('notifications').select(['last_error']).where('id', '=', n.id).executeTakeFirstOrThrow();
      const attempt = await tdb.db
        .selectFrom('attempts')
        .select(['error', 'provider_status'])
        .where('notification_id', '=', n.id)
        .executeTakeFirstOrThrow();
      const { rows } = await sql<{ topic: string; key: string; value: string; headers: unknown }>`
        SELECT topic, key, value, headers FROM outbox WHERE headers->>'notification-id' = ${n.id} ORDER BY id`.execute(tdb.db);
      const messages = rows.slice(1).map((m) => JSON.parse(JSON.stringify(m).replaceAll(n.id, 'ID')) as unknown);
      return { lastError: row.last_error, attempt, messages };
    };
    const single = await stored(x);
    expect(single.lastError).toBe(error.replace('\uD83D', '\uFFFD'));
    expect(single.attempt).toEqual({ error: error.replace('\uD83D', '\uFFFD'), provider_status: '5"03\\' });
    expect(single.messages).toHaveLength(2);
    expect(await stored(y)).toEqual(single);
  });

  it('refuses two outcomes of one notification in one statement, wherever they stand in the group', async () => {
    const n = await add();
    await expect(recordOutcomes(fromKysely(tdb.db), [outcome(n, 'sent'), outcome(n, 'sent')])).rejects.toThrow(/appears twice/);
    const [a, b] = [await add(), await add()];
    const apart = [outcome(n, 'sent'), outcome(a, 'sent'), outcome(b, 'sent'), outcome(n, 'sent')];
    await expect(recordOutcomes(fromKysely(tdb.db), apart)).rejects.toThrow(/appears twice/);
    const { rows } = await sql<{ n: number }>`
      SELECT count(*)::int AS n FROM attempts WHERE notification_id IN (${n.id}, ${a.id}, ${b.id})`.execute(tdb.db);
    expect(rows[0]!.n).toBe(0); // nothing of either group was written
  });

  it('isolates an outcome PostgreSQL refuses: it alone fails, its group-mates are recorded', async () => {
    const [a, bad, b] = [await add(), await add(), await add()] as [Notification, Notification, Notification];
    const flushes: OutcomeFlush[] = [];
    const writer = createOutcomeWriter(fromKysely(tdb.db), { maxBatch: 64, maxDelayMs: 0, onFlush: (f) => flushes.push(f) });
    // queued without a next attempt breaks notifications_queued_iff_next_attempt (the notifications_invariants trigger, 0320).
    const broken = outcome(bad, 'transient');
    const poisoned: RecordOutcomeParams = { ...broken, plan: { ...broken.plan, nextAttemptAt: null } };
    const results = await Promise.allSettled([
      writer.record(outcome(a, 'sent')),
      writer.record(poisoned),
      writer.record(outcome(b, 'sent')),
    ]);
    expect(results[0]).toEqual({ status: 'fulfilled', value: true });
    expect(results[1]).toMatchObject({ status: 'rejected', reason: { code: '23514' } });
    expect(results[2]).toEqual({ status: 'fulfilled', value: true });
    await writer.flush();
    expect(flushes).toMatchObject([{ size: 3, recorded: 2, failed: 1, isolated: true }]);
    expect((await tdb.db.selectFrom('notifications').select('state').where('id', '=', bad.id).executeTakeFirstOrThrow()).state).toBe(
      'queued',
    );
    expect(await tdb.db.selectFrom('attempts').selectAll().where('notification_id', '=', bad.id).execute()).toHaveLength(0);
  });
});

describe('the delivery handler with batching', () => {
  it('records concurrent deliveries in one transaction; a duplicate delivery of the same attempt is told it lost', async () => {
    const events = createDispatcherEvents(silentLogger);
    const flushes: DispatcherEventMap['outcomesFlushed'][] = [];
    events.on('outcomesFlushed', (f) => flushes.push(f));
    const webhook = createScriptedProvider('webhook', () => ({ kind: 'sent', providerStatus: '200' }));
    // A long delay: the group is cut by the 5 outcomes arriving together, not by the timer.
    const handler = createDeliveryHandler({
      db: tdb.db,
      providers: { webhook },
      content: plainContent(),
      clock,
      logger: silentLogger,
      events,
      config: { ...config, outcomeBatchDelayMs: 50 },
    });
    const ns = await Promise.all([add(), add(), add(), add(), add()]);
    const message = (n: Notification): InboundMessage => {
      const m = buildDeliveryRequest(n, 1, clock.now());
      return { topic: 'b.requests', partition: 0, offset: '0', key: Buffer.from(m.key), value: Buffer.from(m.value), headers: m.headers };
    };
    const signal = new AbortController().signal;
    const results: HandleResult[] = await Promise.all([...ns.map((n) => handler(message(n), signal)), handler(message(ns[0]), signal)]);

    expect(results.slice(0, 5).every((r) => r.kind === 'recorded')).toBe(true);
    expect(results[5]).toEqual({ kind: 'skipped', notificationId: ns[0]?.id, reason: 'raced' });
    // The duplicate waited for the first outcome's transaction and then matched nothing.
    expect(flushes.map((f) => [f.size, f.recorded])).toEqual([
      [5, 5],
      [1, 0],
    ]);
    const sentEvents = (await Promise.all(ns.map((n) => outboxAfterEnqueue(n.id)))).flat();
    expect(sentEvents.map((r) => r.type)).toEqual(Array(5).fill('notification.sent'));
    expect(new Set(sentEvents.map((r) => r.txid)).size).toBe(1);
    expect(await tdb.db.selectFrom('attempts').selectAll().where('notification_id', '=', ns[0].id).execute()).toHaveLength(1);
  });
});

describe('batched reads', () => {
  it('loads the notifications of concurrently starting deliveries with one query, each request getting its own row', async () => {
    const [a, b] = [await add(), await add()] as [Notification, Notification];
    const loader = createNotificationLoader(counted, { maxBatch: 256, delayMs: 0 });
    statements.length = 0;
    const [ra, rb, unknown, again] = await Promise.all([
      loader.load(a.id),
      loader.load(b.id),
      loader.load('ntf_01KZZZZZZZZZZZZZZZZZZZZZZZ'),
      loader.load(a.id),
    ]);
    expect(statements).toHaveLength(1);
    expect(ra).toMatchObject({ id: a.id, state: 'queued', attempts: 0 });
    expect(rb).toMatchObject({ id: b.id });
    expect(unknown).toBeUndefined();
    expect(again).toEqual(ra);
  });

  it('a read is as fresh as a single query: a change committed before the request is seen', async () => {
    const n = await add();
    const loader = createNotificationLoader(counted, { maxBatch: 256, delayMs: 0 });
    expect((await loader.load(n.id))?.attempts).toBe(0);
    await recordOutcome(fromKysely(tdb.db), outcome(n, 'sent'));
    expect(await loader.load(n.id)).toMatchObject({ state: 'sent', attempts: 1 });
  });

  it("reads each notification's opt-out in the same query, agreeing with suppressionMatch; a recipient SQL cannot normalize exactly is left to the preparer", async () => {
    const exec = fromKysely(tdb.db);
    const mixedCase = await add({ channel: 'email', to: 'Opted.Out@Example.COM' });
    const categoryOnly = await add({ channel: 'email', to: 'cat@example.com', category: 'marketing' });
    const otherCategory = await add({ channel: 'email', to: 'cat@example.com', category: 'billing' });
    const free = await add({ channel: 'email', to: 'Free@example.com' });
    const webhook = await add({ to: 'https://example.com/OptedOut' });
    const nonAscii = await add({ channel: 'email', to: 'ÉMILE@example.com' });
    await suppressionInsert(exec, {
      tenantId: 't1',
      channel: 'email',
      recipient: 'opted.out@example.com',
      reason: 'bounced',
      now: clock.now(),
    });
    await suppressionInsert(exec, {
      tenantId: 't1',
      channel: 'email',
      recipient: 'CAT@example.com',
      category: 'marketing',
      now: clock.now(),
    });
    await suppressionInsert(exec, { tenantId: 't1', channel: 'webhook', recipient: webhook.recipient, now: clock.now() });
    await suppressionInsert(exec, { tenantId: 't1', channel: 'email', recipient: nonAscii.recipient, now: clock.now() });
    const loader = createNotificationLoader(counted, { maxBatch: 256, delayMs: 0 });
    const plain = [mixedCase, categoryOnly, otherCategory, free, webhook];
    statements.length = 0;
    const rows = await Promise.all([...plain, nonAscii].map((n) => loader.load(n.id)));
    expect(statements).toHaveLength(1);
    for (const [i, n] of plain.entries()) {
      const match = await suppressionMatch(exec, { tenantId: 't1', channel: n.channel, recipient: n.recipient, category: n.category });
      expect(deliveryOptOut(rows[i]!), n.recipient).toEqual(match);
    }
    expect(plain.map((_, i) => deliveryOptOut(rows[i]!)?.category ?? null)).toEqual(['*', 'marketing', null, null, '*']);
    expect(deliveryOptOut(rows[5]!)).toBeUndefined();

    // The preparer takes the answer as given; a recipient the read left unchecked is checked on its own.
    const preparer = createContentPreparer({ db: counted, clock });
    statements.length = 0;
    expect((await preparer.prepare(rows[0]!, 1, deliveryOptOut(rows[0]!))).kind).toBe('suppressed');
    expect((await preparer.prepare(rows[3]!, 1, deliveryOptOut(rows[3]!))).kind).toBe('ready');
    expect(statements).toHaveLength(0);
    expect((await preparer.prepare(rows[5]!, 1, deliveryOptOut(rows[5]!))).kind).toBe('suppressed');
    expect(statements).toHaveLength(1);
  });

  it('checks the opt-outs of concurrently prepared notifications with one query, each with its own answer, never cached', async () => {
    const exec = fromKysely(tdb.db);
    const everything = await add({ to: 'https://example.com/opted-out-of-all' });
    const marketingOnly = await add({ to: 'https://example.com/no-marketing', category: 'marketing' });
    const billing = await add({ to: 'https://example.com/no-marketing', category: 'billing' });
    const free = await add({ to: 'https://example.com/free' });
    await suppressionInsert(exec, {
      tenantId: 't1',
      channel: 'webhook',
      recipient: everything.recipient,
      reason: 'unsubscribed',
      now: clock.now(),
    });
    await suppressionInsert(exec, {
      tenantId: 't1',
      channel: 'webhook',
      recipient: marketingOnly.recipient,
      category: 'marketing',
      now: clock.now(),
    });
    const preparer = createContentPreparer({ db: counted, clock });
    statements.length = 0;
    const prepared = await Promise.all([everything, marketingOnly, billing, free].map((n) => preparer.prepare(n, 1)));
    expect(statements).toHaveLength(1);
    expect(prepared.map((p) => p.kind)).toEqual(['suppressed', 'suppressed', 'ready', 'ready']);
    expect(prepared[0]).toEqual({ kind: 'suppressed', reason: 'the recipient opted out of every webhook message (unsubscribed)' });
    expect(prepared[1]).toEqual({ kind: 'suppressed', reason: 'the recipient opted out of webhook messages of category "marketing"' });

    // An opt-out recorded now applies to the very next check.
    await suppressionInsert(exec, { tenantId: 't1', channel: 'webhook', recipient: free.recipient, now: clock.now() });
    expect((await preparer.prepare(free, 2)).kind).toBe('suppressed');
  });
});
