import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { NotificationList, createApp } from '@notify/api';
import { delayTiers, planOutcome, recordOutcome, type AttemptResult } from '@notify/dispatcher';
import { type Notification, type SqlExecutor, fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { explain, recordStatements } from './support/plans.js';
import { seedTenantKeys } from '../packages/api/test/support.js';
import { deadGroupList } from '../packages/api/src/sql/dead-group-list.js';
import { notificationList } from '../packages/api/src/sql/notification-list.js';
import { notificationPage } from '../packages/api/src/console/sql/notification-page.js';
import { notificationBulkRequeue } from '../packages/api/src/sql/notification-bulk-requeue.js';

// A dead group's own list (GET /v1/notifications?dead_reason=&last_error_prefix= | has_last_error=false,
// what the console's dead page links each group to) holds exactly the group: the notifications
// die through the dispatcher's own outcome code, and every group the dead page's statement
// (deadGroupList) shows is paged through the API and compared with what was made to die in it.

const clock = new ManualClock(new Date('2026-06-01T12:00:00Z'));
const retry = { baseDelayMs: 1_000, maxDelayMs: 60_000, jitter: 0 };
const tiers = delayTiers(retry);
let t: TestDatabase;
let exec: SqlExecutor;
let app: ReturnType<typeof createApp>;
let keys: Record<'acme' | 'globex', string>;

beforeAll(async () => {
  t = await createTestDatabase();
  exec = fromKysely(t.db);
  keys = await seedTenantKeys(t, ['acme', 'globex'] as const, clock.now());
  // Two attempts at most: a transient failure leaves a notification queued with its error, a second one kills it (exhausted).
  app = createApp({ db: t.db, clock, config: { retry: { maxAttempts: 2, defaultTtlMs: 3_600_000 } } });
});
afterAll(async () => {
  await t?.close();
});

async function enqueue(tenant: keyof typeof keys, path: string): Promise<string> {
  clock.advance(1);
  const res = await app.request('/v1/notifications', {
    method: 'POST',
    headers: { authorization: `Bearer ${keys[tenant]}`, 'content-type': 'application/json' },
    body: JSON.stringify({ channel: 'webhook', to: `https://hooks.example.com/${path}`, body: '{}' }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

/** One delivery attempt of `id` with `result`, recorded as the dispatcher records it. */
async function attempt(id: string, result: AttemptResult): Promise<void> {
  const { rows } = await t.pool.query<Notification>('SELECT * FROM notifications WHERE id = $1', [id]);
  const n = rows[0]!;
  const now = clock.now();
  const plan = planOutcome({ notification: n, attempt: n.attempts + 1, result, now, retry, tiers, random: () => 0.5 });
  expect(await recordOutcome(exec, { notification: n, plan, startedAt: now, finishedAt: now })).toBe(true);
}

const permanent = (error: string): AttemptResult => ({ kind: 'permanent', error, providerStatus: '410' });
const transient = (error: string): AttemptResult => ({ kind: 'transient', error, providerStatus: '503' });

/** Every id of one list, paged through by `next_cursor` two at a time. */
async function listAll(tenant: keyof typeof keys, query: URLSearchParams): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const q = new URLSearchParams(query);
    q.set('limit', '2');
    if (cursor) q.set('cursor', cursor);
    const res = await app.request(`/v1/notifications?${q.toString()}`, { headers: { authorization: `Bearer ${keys[tenant]}` } });
    expect(res.status, await res.clone().text()).toBe(200);
    const page = NotificationList.parse(await res.json());
    ids.push(...page.data.map((n) => n.id));
    cursor = page.next_cursor;
  } while (cursor !== null);
  return ids;
}

/** The list query of a dead group, as the console's dead page links to it. */
function groupQuery(reason: string, error: string | null): URLSearchParams {
  return new URLSearchParams(
    error === null ? { dead_reason: reason, has_last_error: 'false' } : { dead_reason: reason, last_error_prefix: error },
  );
}

describe("a dead group's list", () => {
  it('holds exactly the notifications of the group: same tenant, reason and first 200 characters of the last error (or none)', async () => {
    const long = `HTTP 503: ${'x'.repeat(250)}`;
    const odd = 'HTTP 400: line one\nline two & 50% _off_ +plus #frag';
    const members = new Map<string, string[]>(); // "reason|error start" → ids
    const die = async (key: string, id: string, ...results: AttemptResult[]) => {
      for (const r of results) await attempt(id, r);
      members.set(key, [...(members.get(key) ?? []), id]);
    };
    for (let i = 0; i < 3; i++) await die('permanent|HTTP 410 Gone', await enqueue('acme', `gone/${i}`), permanent('HTTP 410 Gone'));
    // Errors that differ after their 200th character: one group, as the dead page shows it.
    for (const end of ['a', 'b']) {
      await die(
        `exhausted|${long.slice(0, 200)}`,
        await enqueue('acme', `busy/${end}`),
        transient(`${long}${end}`),
        transient(`${long}${end}`),
      );
    }
    // The same error with another reason, an error the group's error is a prefix of, and one with
    // a line break and the characters a query string or a LIKE pattern would take for syntax.
    await die('exhausted|HTTP 410 Gone', await enqueue('acme', 'gone-twice'), transient('HTTP 410 Gone'), transient('HTTP 410 Gone'));
    await die('permanent|HTTP 410 Gone, for good', await enqueue('acme', 'gone-long'), permanent('HTTP 410 Gone, for good'));
    await die(`permanent|${odd}`, await enqueue('acme', 'odd'), permanent(odd));
    // A group without a last error: no outcome the dispatcher records leaves none, but the dead
    // page shows such rows as a group of their own (older rows, a repair by hand).
    const none = await enqueue('acme', 'none');
    await attempt(none, permanent('HTTP 410 Gone'));
    await t.pool.query('UPDATE notifications SET last_error = NULL WHERE id = $1', [none]);
    members.set('permanent|', [none]);
    // Not members of any dead group: queued with the group's error (one transient attempt), and
    // another tenant's notification with the same reason and error.
    const queued = await enqueue('acme', 'gone-once');
    await attempt(queued, transient('HTTP 410 Gone'));
    const theirs = await enqueue('globex', 'gone/theirs');
    await attempt(theirs, permanent('HTTP 410 Gone'));

    const groups = await deadGroupList(exec, { tenantId: 'acme', limit: 100 });
    expect(groups.map((g) => `${g.dead_reason}|${g.error ?? ''}`).sort()).toEqual([...members.keys()].sort());
    // Past the limit, every row still says how many groups there are.
    const firstTwo = await deadGroupList(exec, { tenantId: 'acme', limit: 2 });
    expect(firstTwo.map((g) => [g.dead_reason, g.error, g.groups])).toEqual(
      groups.slice(0, 2).map((g) => [g.dead_reason, g.error, members.size]),
    );
    for (const g of groups) {
      const expected = members.get(`${g.dead_reason}|${g.error ?? ''}`)!;
      const listed = await listAll('acme', groupQuery(g.dead_reason, g.error));
      expect(listed, `${g.dead_reason}: ${g.error}`).toHaveLength(g.count);
      // Newest first, each once, and no other notification.
      expect(listed).toEqual([...expected].sort().reverse());
    }
    expect(await listAll('acme', groupQuery('permanent', 'HTTP 410 Gone'))).not.toContain(theirs);
    expect(await listAll('globex', groupQuery('permanent', 'HTTP 410 Gone'))).toEqual([theirs]);
    // The reason alone: every group of it; has_last_error=true: those of it with an error.
    const permanentIds = [...members].filter(([k]) => k.startsWith('permanent|')).flatMap(([, ids]) => ids);
    expect((await listAll('acme', new URLSearchParams({ dead_reason: 'permanent' }))).sort()).toEqual(permanentIds.sort());
    expect((await listAll('acme', new URLSearchParams({ dead_reason: 'permanent', has_last_error: 'true' }))).sort()).toEqual(
      permanentIds.filter((id) => id !== none).sort(),
    );
    expect(await listAll('acme', new URLSearchParams({ state: 'dead', dead_reason: 'suppressed' }))).toEqual([]);
  });
});

describe("a dead group's list at 100,000 notifications", () => {
  let big: TestDatabase;
  beforeAll(async () => {
    big = await createTestDatabase();
    // Every other hundred acme's, in id order as enqueues over time write them; of every 100: 80 sent,
    // 10 queued (5 with an error), 10 dead in four groups (4 permanent 'HTTP 410 Gone', 3
    // exhausted 'HTTP 503', 2 exhausted with a 250-character error, 1 exhausted without one).
    await big.pool.query(
      `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, dead_reason, last_error, max_attempts, attempts,
                                  next_attempt_at, sent_at, expires_at, created_at, updated_at)
       SELECT 'ntf_' || lpad(g::text, 22, '0'), CASE WHEN g / 100 % 2 = 0 THEN 'acme' ELSE 'other' || (g % 7) END, 'webhook',
              'https://hooks.example.com/' || (g % 50), '{}', s.state, s.reason, s.error, 3, 1,
              CASE WHEN s.state = 'queued' THEN now() END, CASE WHEN s.state = 'sent' THEN now() END,
              now() + interval '1 day', now(), now()
         FROM generate_series(1, 100000) AS g,
              LATERAL (SELECT CASE WHEN g % 100 < 80 THEN 'sent' WHEN g % 100 < 90 THEN 'queued' ELSE 'dead' END AS state,
                              CASE WHEN g % 100 BETWEEN 90 AND 93 THEN 'permanent' WHEN g % 100 >= 94 THEN 'exhausted' END AS reason,
                              CASE WHEN g % 100 BETWEEN 85 AND 93 THEN 'HTTP 410 Gone' WHEN g % 100 BETWEEN 94 AND 96 THEN 'HTTP 503'
                                   WHEN g % 100 IN (97, 98) THEN repeat('x', 250) END AS error) AS s
        ORDER BY g`,
    );
    await big.pool.query('VACUUM ANALYZE notifications');
  });
  afterAll(async () => {
    await big?.close();
  });

  /** The executed plan of the first statement `run` sends (EXPLAIN ANALYZE: it runs it). */
  async function executedPlan(run: (db: SqlExecutor) => Promise<unknown>): Promise<string> {
    const [first] = await recordStatements(run);
    return explain(big.pool, `(ANALYZE, COSTS OFF, TIMING OFF) ${first!.text}`, first!.values);
  }

  it("reads one page of the group from the dead notifications' index (0031) backward, and nothing beyond the page", async () => {
    const groups = [
      { deadReason: 'permanent', lastErrorPrefix: 'HTTP 410 Gone' },
      { deadReason: 'exhausted', lastErrorPrefix: 'x'.repeat(200) },
      { deadReason: 'exhausted', hasLastError: false },
    ];
    // Each group holds 500 to 2,000 of acme's rows: a page of 25 (and the API's one more) reads 26.
    for (const filter of groups) {
      for (const beforeId of [undefined, 'ntf_0000000000000000050000']) {
        const plan = await executedPlan((db) => notificationList(db, { tenantId: 'acme', filter, beforeId, limit: 26 }));
        expect(plan, plan).toMatch(/Index Scan Backward using notifications_tenant_dead_idx on notifications \(actual rows=26 loops=1\)/);
        expect(plan).not.toMatch(/Sort|Seq Scan|Bitmap/);
      }
      // The console's page, both ways.
      for (const toward of ['next', 'previous'] as const) {
        const plan = await executedPlan((db) =>
          notificationPage(db, { tenantId: 'acme', filter, cursor: { key: 'ntf_0000000000000000050000', toward }, limit: 50 }),
        );
        expect(plan, plan).toMatch(
          /Index Scan (Backward )?using notifications_tenant_dead_idx on notifications \(actual rows=51 loops=1\)/,
        );
        expect(plan).not.toMatch(/Sort|Seq Scan|Bitmap/);
      }
    }
  });

  it("re-queues a group's oldest from the same index forward, without reading or sorting the rest of the group", async () => {
    const groups = [
      { deadReason: 'permanent', lastErrorPrefix: 'HTTP 410 Gone' },
      { deadReason: 'exhausted', hasLastError: false },
    ];
    const client = await big.pool.connect();
    try {
      for (const filter of groups) {
        const [statement] = await recordStatements((db) =>
          notificationBulkRequeue(db, { tenantId: 'acme', filter, now: new Date(), budget: 3, limit: 26 }),
        );
        // EXPLAIN ANALYZE runs the UPDATE: in a transaction rolled back, so every group stays whole.
        await client.query('BEGIN');
        try {
          const plan = await explain(client, `(ANALYZE, COSTS OFF, TIMING OFF) ${statement!.text}`, statement!.values);
          expect(plan, plan).toMatch(/Index Scan using notifications_tenant_dead_idx on notifications( \w+)? \(actual rows=26 loops=1\)/);
          expect(plan, plan).not.toMatch(/Sort|Seq Scan|Bitmap/);
          expect(plan, plan).toMatch(/Update on notifications n \(actual rows=26 loops=1\)/);
        } finally {
          await client.query('ROLLBACK');
        }
      }
    } finally {
      client.release();
    }
  });
});
