import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromKysely, fromPgClient, preparedName } from '@notify/outbox';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import {
  type Queryable,
  explain,
  explainExecute,
  explainPrepared,
  preparedPlanCounts,
  recordStatements,
} from '../../../test/support/plans.js';
import { notificationRecordOutcomes } from '../src/sql/notification-record-outcomes.js';
import type { NotificationRecordOutcomeParams } from '../src/sql/notification-record-outcome.js';
import { notificationGetMany } from '../src/sql/notification-get-many.js';

// How PostgreSQL plans the delivery path's hot statements.
//
// The group commit must find its rows by primary key, whatever the statistics say. The case that
// once went wrong: statistics taken while almost nothing was queued, then a backlog arrives (no
// ANALYZE since: autovacuum has not run yet, or is off). The planner then believed a handful of
// rows were queued and answered `state = 'queued'` from a partial index on queued rows: every
// group commit read the whole backlog (20,000 index entries here) to update its ~50 rows.

const SENT = 20_000;
const QUEUED = 20_000;
const GROUP = 50;

let tdb: TestDatabase;

const queuedId = (n: number) => `ntf_q${String(n).padStart(21, '0')}`;

/** QUEUED queued notifications, queuedId(1) … queuedId(QUEUED), with no ANALYZE after. */
async function insertQueued(db: Queryable): Promise<void> {
  await db.query(
    `INSERT INTO notifications (id, tenant_id, channel, recipient, body, max_attempts, next_attempt_at, expires_at, created_at, updated_at)
     SELECT 'ntf_q' || lpad(g::text, 21, '0'), 't1', 'webhook', 'https://example.com/' || (g % 97), 'hello', 8, now(),
            now() + interval '1 day', now(), now()
       FROM generate_series(1, $1) g`,
    [QUEUED],
  );
}

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.pool.query(
    `INSERT INTO notifications (id, tenant_id, channel, recipient, body, max_attempts, attempts, state, sent_at, next_attempt_at,
                                expires_at, created_at, updated_at)
     SELECT 'ntf_s' || lpad(g::text, 21, '0'), 't1', 'webhook', 'https://example.com/' || (g % 97), 'hello', 8, 1, 'sent', now(), NULL,
            now() + interval '1 day', now(), now()
       FROM generate_series(1, $1) g`,
    [SENT],
  );
  await tdb.pool.query('ANALYZE notifications');
  await insertQueued(tdb.pool);
});

afterAll(async () => {
  await tdb?.close();
});

/** Outcomes "sent" for queued notifications first … first + GROUP − 1, each with its status event. */
function group(first: number): NotificationRecordOutcomeParams[] {
  const now = new Date();
  return Array.from({ length: GROUP }, (_, k) => {
    const id = queuedId(first + k);
    return {
      id,
      attempt: 1,
      state: 'sent',
      deadReason: null,
      lastError: null,
      nextAttemptAt: null,
      startedAt: now,
      finishedAt: now,
      outcome: 'sent',
      error: null,
      providerStatus: '200',
      provider: 'primary',
      messages: [{ topic: 'events', key: `t1/webhook/${k}`, value: `{"id":"${id}"}`, headers: { 'notification-id': id } }],
    };
  });
}

/** The plan lines of the UPDATE's scan of notifications. */
function notificationScans(plan: string): string[] {
  return plan.split('\n').filter((line) => /Scan .*on notifications t\b/.test(line));
}

describe('the group commit after a backlog arrived under stale statistics', () => {
  it('reads the group by primary key, in custom and generic plans', async () => {
    const client = await tdb.pool.connect();
    try {
      // The statement as notificationRecordOutcomes sends it, explained with its values (a custom plan).
      const [statement] = await recordStatements((recorder) => notificationRecordOutcomes(recorder, { outcomes: group(10_001) }));
      const customPlan = await explain(client, statement!.text, statement!.values);
      expect(notificationScans(customPlan)).toEqual([expect.stringContaining('using notifications_pkey on notifications t')]);
      expect(customPlan).not.toMatch(/notifications_queued_|Seq Scan on notifications/);

      // The generic plan, which a pooled connection settles on after its first executions.
      await client.query('SET plan_cache_mode = force_generic_plan');
      const genericPlan = await explainPrepared(client, 'outcomes_generic', statement!);
      expect(await preparedPlanCounts(client, 'outcomes\\_generic')).toEqual([{ generic: 1, custom: 0 }]);
      expect(notificationScans(genericPlan)).toEqual([expect.stringContaining('using notifications_pkey on notifications t')]);
      expect(genericPlan).not.toMatch(/notifications_queued_|Seq Scan on notifications/);
    } finally {
      await client.query('RESET plan_cache_mode');
      await client.query('DEALLOCATE ALL');
      client.release();
    }
  });

  it('records every outcome of the group, and only those', async () => {
    const client = await tdb.pool.connect();
    try {
      const recorded = await notificationRecordOutcomes(fromPgClient(client), { outcomes: group(12_001) });
      expect(recorded).toEqual(Array.from({ length: GROUP }, () => true));
      const { rows } = await client.query<{ state: string; n: number }>(
        `SELECT state, count(*)::int AS n FROM notifications WHERE id LIKE 'ntf_q%' GROUP BY state ORDER BY state`,
      );
      expect(rows).toEqual([
        { state: 'queued', n: QUEUED - GROUP },
        { state: 'sent', n: GROUP },
      ]);
      const attempts = await client.query<{ n: number }>(`SELECT count(*)::int AS n FROM attempts WHERE notification_id LIKE 'ntf_q%'`);
      expect(attempts.rows[0]!.n).toBe(GROUP);
      // A second delivery of the same group finds nothing queued at attempt 0: nothing is written again.
      const again = await notificationRecordOutcomes(fromPgClient(client), { outcomes: group(12_001) });
      expect(again).toEqual(Array.from({ length: GROUP }, () => false));
    } finally {
      client.release();
    }
  });
});

describe('the delivery read', () => {
  it('reads one id, and many in the order given, with a gap where none exists', async () => {
    const exec = fromKysely(tdb.db);
    const [one] = await notificationGetMany(exec, { ids: [queuedId(100)] });
    expect(one).toMatchObject({ id: queuedId(100), tenant_id: 't1', state: 'queued', opt_out_category: null });
    const many = await notificationGetMany(exec, { ids: [queuedId(102), 'ntf_missing', queuedId(101)] });
    expect(many.map((r) => r?.id)).toEqual([queuedId(102), undefined, queuedId(101)]);
  });

  it('settles on its generic plan when it reads a few ids at a time (a steady trickle)', async () => {
    // A connection of its own, so that no other test's executions count.
    const client = new pg.Client({ connectionString: tdb.url });
    await client.connect();
    try {
      const exec = fromPgClient(client);
      for (let n = 0; n < 12; n++) {
        // One to four ids, as the loader groups deliveries that start together at a low rate.
        const ids = Array.from({ length: 1 + (n % 4) }, (_, k) => queuedId(200 + 4 * n + k));
        expect((await notificationGetMany(exec, { ids })).map((r) => r?.id)).toEqual(ids);
      }
      // PostgreSQL tries five custom plans before it weighs the generic one.
      expect(await preparedPlanCounts(client, 'dispatcher\\_notification\\_read%')).toEqual([{ generic: 7, custom: 5 }]);
      // The generic plan reads the primary key.
      expect(await explain(client, `EXECUTE dispatcher_notification_read_v4('{${queuedId(300)}}')`)).toMatch(
        /Index Scan using notifications_pkey on notifications n/,
      );
    } finally {
      await client.end();
    }
  });
});

describe('a service started on a new database', () => {
  // A connection's generic plan is kept until an ANALYZE, a VACUUM or DDL of the table; a service
  // started on an empty database makes its plans in its first seconds, and with autovacuum off (or
  // before its first ANALYZE) keeps them while the table grows.
  let fresh: TestDatabase;

  beforeAll(async () => {
    fresh = await createTestDatabase();
  });

  afterAll(async () => {
    await fresh?.close();
  });

  it('keeps reading and updating by primary key as the table grows', async () => {
    const client = new pg.Client({ connectionString: fresh.url });
    await client.connect();
    try {
      const exec = fromPgClient(client);
      const missing = (n: number) => Array.from({ length: 1 + (n % 3) }, (_, k) => `ntf_none${n}_${k}`);
      // What a new service's first deliveries run while the table is still empty: enough executions to settle on the generic plan.
      for (let n = 0; n < 8; n++) {
        expect(await notificationGetMany(exec, { ids: missing(n) })).toEqual(missing(n).map(() => undefined));
        const outcomes = group(1)
          .slice(0, 1 + (n % 3))
          .map((o, k) => ({ ...o, id: missing(n)[k]! }));
        expect(await notificationRecordOutcomes(exec, { outcomes })).toEqual(outcomes.map(() => false));
      }
      const settled = await preparedPlanCounts(client, 'dispatcher\\_%');
      expect(settled).toHaveLength(2);
      for (const counts of settled) expect(counts.generic).toBeGreaterThan(0);

      // The table grows; nothing analyzes it.
      await insertQueued(client);
      const readPlan = await explain(client, `EXECUTE dispatcher_notification_read_v4('{${queuedId(7)}}')`);
      expect(readPlan).toMatch(/Index Scan using notifications_pkey on notifications n/);
      expect(readPlan).not.toMatch(/Seq Scan on notifications/);
      const [statement] = await recordStatements((recorder) => notificationRecordOutcomes(recorder, { outcomes: group(1) }));
      const updatePlan = await explainExecute(client, preparedName(statement!.text)!, statement!);
      expect(notificationScans(updatePlan)).toEqual([expect.stringContaining('using notifications_pkey on notifications t')]);
      expect(updatePlan).not.toMatch(/Seq Scan on notifications/);
      // The plans explained are the settled ones, not new ones.
      expect(await preparedPlanCounts(client, 'dispatcher\\_%')).toEqual(settled.map((c) => ({ ...c, generic: c.generic + 1 })));

      // And the group is found and recorded.
      expect(await notificationRecordOutcomes(exec, { outcomes: group(1) })).toEqual(Array.from({ length: GROUP }, () => true));
    } finally {
      await client.end();
    }
  });
});
