/**
 * The article's lab, reproduced on the production code paths: the same `enqueue`, the same
 * delivery handler (parse → load → classify → one-transaction write-back), the same state SQL
 * and the same `KeyedScheduler` (3 in flight), fed from the outbox rows as a ManualClock moves
 * one second at a time from 12:00:00 to 12:00:20. Only Kafka is replaced, by reading the
 * outbox in order; real PostgreSQL holds the state.
 *
 * The article's recipients are obfuscated in its text ("[email protected]"), and our enqueue
 * validates email addresses, so they are ada@ (fails twice), bob@ (succeeds), bad-address@
 * (mailbox does not exist: permanent) and nobody@ (never succeeds) at example.com.
 */
import { ManualClock } from '@notify/runtime/testing';
import { ValidationError, enqueue } from '@notify/outbox';
import { silentLogger } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import type { Kysely } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import {
  compose,
  createDeliveryHandler,
  createDispatcherEvents,
  createKeyedScheduler,
  deadLetter,
  dispatcherConfig,
  messageDueAt,
  orderingKey,
  tracing,
  type HandleResult,
} from '../src/index.js';
import { createMemoryDeadLetterSink, createScriptedProvider, plainContent } from '../src/testing/index.js';
import { createOutboxReplay } from './support/outbox-replay.js';

const ADA = 'ada@example.com';
const BOB = 'bob@example.com';
const BAD = 'bad-address@example.com';
const NOBODY = 'nobody@example.com';

const retry = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000, jitter: 0, defaultTtlMs: 86_400_000 };
const config = dispatcherConfig({ topicPrefix: 'lab', retry, sendTimeoutMs: 2000, maxInFlight: 3, repairAfterMs: 60_000 });

const hhmmss = (iso: string | Date) => new Date(iso).toISOString().slice(11, 19);

async function runLab(db: Kysely<Database>) {
  const clock = new ManualClock('2026-05-01T12:00:00Z');
  const failures = new Map([
    [ADA, 2],
    [NOBODY, 99],
  ]);
  const email = createScriptedProvider('email', (d) => {
    if (d.to === BAD) return { kind: 'permanent', error: 'permanent failure: mailbox does not exist', providerStatus: '550' };
    const left = failures.get(d.to) ?? 0;
    if (left > 0) {
      failures.set(d.to, left - 1);
      return { kind: 'transient', error: 'provider returned 503', providerStatus: '503' };
    }
    return { kind: 'sent', providerStatus: '250' };
  });

  // Enqueue: five calls make four notifications; the unknown channel is refused at the door.
  const opts = { now: clock.now(), maxAttempts: retry.maxAttempts, defaultTtlMs: retry.defaultTtlMs };
  const add = (to: string, key?: string) =>
    enqueue(db, { tenant_id: 'lab', channel: 'email', to, body: 'Welcome', idempotency_key: key }, opts);
  const first = await add(ADA, 'welcome-1');
  const repeat = await add(ADA, 'welcome-1');
  const ids = [
    first.notification.id,
    (await add(BOB)).notification.id,
    (await add(BAD)).notification.id,
    (await add(NOBODY)).notification.id,
  ];
  const refused = await enqueue(db, { tenant_id: 'lab', channel: 'pager', to: 'x', body: 'Welcome' }, opts).catch((e: unknown) => e);
  const label = new Map(ids.map((id, i) => [id, `ntf_00${i + 1}`]));

  // Deliver: every second, what is due, through the production pipeline, 3 in flight.
  const events = createDispatcherEvents(silentLogger);
  const dlq = createMemoryDeadLetterSink();
  const handler = compose(
    tracing(),
    deadLetter(dlq, { events, logger: silentLogger }),
  )(createDeliveryHandler({ db, providers: { email }, content: plainContent(), clock, logger: silentLogger, events, config }));
  const scheduler = createKeyedScheduler({ maxInFlight: config.maxInFlight });
  const replay = createOutboxReplay(db, config.topicPrefix);
  const results: HandleResult[] = [];
  const lateness: number[] = [];
  events.on('dispatched', (e) => lateness.push(e.latenessMs));
  let pending = await replay.takeRequests();
  for (let second = 0; second <= 20; second++) {
    const now = clock.now().getTime();
    const due = pending.filter((m) => (messageDueAt(m)?.getTime() ?? 0) <= now);
    pending = pending.filter((m) => !due.includes(m));
    for (const m of due) scheduler.push(orderingKey(m), async () => void results.push(await handler(m, new AbortController().signal)));
    await scheduler.whenDrained();
    pending.push(...(await replay.takeRequests()));
    clock.advance(1000);
  }

  // The attempt log, in the article's words, from the status events the dispatcher wrote.
  const log = (await replay.events())
    .filter((e) => e.type !== 'notification.queued')
    .map((e) => {
      const head = `${hhmmss(e.occurred_at)} ${label.get(e.id)} attempt ${e.attempts}:`;
      if (e.type === 'notification.sent') return `${head} sent`;
      if (e.type === 'notification.retry_scheduled') return `${head} ${e.last_error}, retry at ${hhmmss(e.next_attempt_at as string)}`;
      if (e.dead_reason === 'exhausted') return `${head} dead after ${e.attempts} attempts (${e.last_error})`;
      return `${head} dead (${e.last_error})`;
    })
    .sort();
  const attemptRows = await db
    .selectFrom('attempts')
    .select(['notification_id', 'attempt', 'started_at', 'outcome', 'provider_status'])
    .execute();
  const finals = await db
    .selectFrom('notifications')
    .select(['id', 'recipient', 'state', 'dead_reason', 'attempts', 'last_error', 'next_attempt_at'])
    .execute();
  // Ids made in the same millisecond are not ordered among themselves: order by the lab's labels.
  const byLabel = (a: { id: string }, b: { id: string }) => (label.get(a.id) ?? '').localeCompare(label.get(b.id) ?? '');
  finals.sort(byLabel);
  return { first, repeat, refused, label, log, attemptRows, finals, email, results, dlq, pending, lateness };
}

describe("the article's lab, on the production handler and real PostgreSQL", () => {
  const dbs: TestDatabase[] = [];
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.close()));
  });

  it('reproduces the attempt log, the final states and the two deliveries, identically on a second run', async () => {
    const runs = [];
    for (let i = 0; i < 2; i++) {
      const tdb = await createTestDatabase();
      dbs.push(tdb);
      runs.push(await runLab(tdb.db));
    }
    const [lab, again] = runs as [Awaited<ReturnType<typeof runLab>>, Awaited<ReturnType<typeof runLab>>];

    // Enqueue: the same key returns the original; the unknown channel is refused with its code.
    expect(lab.first.created).toBe(true);
    expect(lab.repeat.created).toBe(false);
    expect(lab.repeat.notification.id).toBe(lab.first.notification.id);
    expect(lab.refused).toBeInstanceOf(ValidationError);
    expect((lab.refused as ValidationError).code).toBe('unknown_channel');
    expect(lab.finals).toHaveLength(4);

    expect(lab.log).toEqual([
      '12:00:00 ntf_001 attempt 1: provider returned 503, retry at 12:00:01',
      '12:00:00 ntf_002 attempt 1: sent',
      '12:00:00 ntf_003 attempt 1: dead (permanent failure: mailbox does not exist)',
      '12:00:00 ntf_004 attempt 1: provider returned 503, retry at 12:00:01',
      '12:00:01 ntf_001 attempt 2: provider returned 503, retry at 12:00:03',
      '12:00:01 ntf_004 attempt 2: provider returned 503, retry at 12:00:03',
      '12:00:03 ntf_001 attempt 3: sent',
      '12:00:03 ntf_004 attempt 3: provider returned 503, retry at 12:00:07',
      '12:00:07 ntf_004 attempt 4: dead after 4 attempts (provider returned 503)',
    ]);

    // The attempt history agrees: when each attempt started and how it ended.
    expect(
      lab.attemptRows
        .map((a) => `${hhmmss(a.started_at)} ${lab.label.get(a.notification_id)} #${a.attempt} ${a.outcome} ${a.provider_status}`)
        .sort(),
    ).toEqual([
      '12:00:00 ntf_001 #1 transient 503',
      '12:00:00 ntf_002 #1 sent 250',
      '12:00:00 ntf_003 #1 permanent 550',
      '12:00:00 ntf_004 #1 transient 503',
      '12:00:01 ntf_001 #2 transient 503',
      '12:00:01 ntf_004 #2 transient 503',
      '12:00:03 ntf_001 #3 sent 250',
      '12:00:03 ntf_004 #3 transient 503',
      '12:00:07 ntf_004 #4 transient 503',
    ]);

    expect(
      lab.finals.map((n) => ({
        id: lab.label.get(n.id),
        to: n.recipient,
        state: n.state,
        reason: n.dead_reason,
        attempts: n.attempts,
        last_error: n.last_error,
      })),
    ).toEqual([
      { id: 'ntf_001', to: ADA, state: 'sent', reason: null, attempts: 3, last_error: null },
      { id: 'ntf_002', to: BOB, state: 'sent', reason: null, attempts: 1, last_error: null },
      { id: 'ntf_003', to: BAD, state: 'dead', reason: 'permanent', attempts: 1, last_error: 'permanent failure: mailbox does not exist' },
      { id: 'ntf_004', to: NOBODY, state: 'dead', reason: 'exhausted', attempts: 4, last_error: 'provider returned 503' },
    ]);
    expect(lab.finals.every((n) => n.next_attempt_at === null)).toBe(true);

    // The provider's own record: exactly two addresses, Bob at 12:00:00 and Ada at 12:00:03.
    expect(lab.email.delivered).toEqual([BOB, ADA]);
    expect(lab.email.calls).toHaveLength(9);
    expect(lab.email.maxInFlight).toBeLessThanOrEqual(3);
    expect(lab.results.every((r) => r.kind === 'recorded')).toBe(true);
    expect(lab.dlq.letters).toHaveLength(0);
    expect(lab.pending).toHaveLength(0);
    // Every attempt ran exactly on time in lab time: the clock only moves in whole seconds.
    expect(lab.lateness.every((l) => l === 0)).toBe(true);

    // Reproducible: the second run on a fresh database gives the same log and states.
    expect(again.log).toEqual(lab.log);
    expect(again.finals.map((n) => [n.state, n.attempts, n.last_error])).toEqual(
      lab.finals.map((n) => [n.state, n.attempts, n.last_error]),
    );
  });
});
