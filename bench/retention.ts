// Retention delete rate at 1,000,000 notifications (issue 15): seeds a fresh database with one
// tenant's notifications (90 % terminal and older than the retention, each with one attempt; 10 %
// young), then runs the retention service's rounds (1,000 notifications per DELETE, each its own
// transaction) until nothing old is left, and prints the delete rate and the per-statement times
// (a statement's duration bounds how long it holds its row locks).
//   pnpm build && tsc -p bench/tsconfig.json && node --enable-source-maps bench/dist/retention.js [rows]
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createRetentionService } from '@notify/dispatcher';
import { ensureDatabase, migrateToLatest, withDatabase } from '@notify/migrations';
import { fromPgClient } from '@notify/outbox';
import { createDb, silentLogger, systemClock } from '@notify/runtime';

const ROWS = Number(process.argv[2] ?? 1_000_000);
const BATCH = 1_000;
const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `notify_retention_bench_${randomBytes(3).toString('hex')}`;
const url = withDatabase(server, name);

async function main(): Promise<void> {
  await ensureDatabase(url);
  const db = createDb({ connectionString: url, max: 2, applicationName: 'retention-bench' });
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await migrateToLatest(db);
    const t0 = performance.now();
    await pool.query(
      `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, dead_reason, attempts, max_attempts,
                                  next_attempt_at, expires_at, created_at, updated_at, sent_at)
       SELECT 'ntf_' || notify_ulid((extract(epoch FROM ts) * 1000)::bigint, decode(md5(i::text), 'hex')),
              'bench', 'email', 'user' || (i % 50000) || '@example.com', 'hello', st,
              CASE WHEN st = 'dead' THEN 'permanent' END, CASE WHEN st = 'cancelled' THEN 0 ELSE 1 END, 3,
              NULL, ts + interval '1 day', ts, ts + interval '1 second', CASE WHEN st = 'sent' THEN ts + interval '1 second' END
         FROM (SELECT i,
                      -- 10 % in the last 10 days (kept), 90 % 31–90 days old (deleted)
                      CASE WHEN i % 10 = 0 THEN now() - (i::double precision / $1) * interval '10 days'
                           ELSE now() - interval '31 days' - (i::double precision / $1) * interval '59 days' END AS ts,
                      CASE WHEN i % 100 < 94 THEN 'sent' WHEN i % 100 < 99 THEN 'dead' ELSE 'cancelled' END AS st
                 FROM generate_series(1, $1) AS i) s`,
      [ROWS],
    );
    await pool.query(
      `INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome, provider_status)
       SELECT id, 1, created_at, created_at + interval '1 second', CASE WHEN state = 'sent' THEN 'sent' ELSE 'permanent' END, '250'
         FROM notifications WHERE attempts = 1`,
    );
    await pool.query('VACUUM ANALYZE');
    const seeded = (performance.now() - t0) / 1000;
    const { rows: old } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM notifications WHERE updated_at < now() - interval '30 days'`,
    );
    console.log(`seeded ${ROWS} notifications (${old[0]!.n} older than 30 days) with their attempts in ${seeded.toFixed(0)} s`);

    // One statement per round, so each round's time is one DELETE's time.
    const service = createRetentionService(
      { retentionDays: 30, batchSize: BATCH, maxStatementsPerRound: 1 },
      { db: fromPgClient(pool), clock: systemClock, logger: silentLogger },
    );
    const { rows: before } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM attempts');
    const attemptsBefore = before[0]!.n;
    const times: number[] = [];
    let deleted = 0;
    const start = performance.now();
    for (;;) {
      const s = performance.now();
      const round = await service.runOnce();
      if (round.deleted === 0) break;
      times.push(performance.now() - s);
      deleted += round.deleted;
    }
    const seconds = (performance.now() - start) / 1000;
    times.sort((a, b) => a - b);
    const at = (q: number) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)]!.toFixed(1);
    const { rows: left } = await pool.query<{ n: number; a: number }>(
      'SELECT (SELECT count(*)::int FROM notifications) AS n, (SELECT count(*)::int FROM attempts) AS a',
    );
    console.log(
      `deleted ${deleted} notifications and ${attemptsBefore - left[0]!.a} attempts in ${seconds.toFixed(1)} s: ` +
        `${Math.round(deleted / seconds)} notifications/s; ${left[0]!.n} notifications left`,
    );
    console.log(
      `per DELETE of ${BATCH} (one transaction): p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${times[times.length - 1]!.toFixed(1)} ms`,
    );
  } finally {
    await db.destroy();
    await pool.end();
    const admin = new pg.Client({ connectionString: withDatabase(server, 'postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

await main();
