// Console page timings at 1,000,000 notifications (issue 14): seeds a fresh database with one
// tenant's 1M notifications over 30 days (90 % sent, 5 % dead in 4 error groups, 4 % queued, 1 %
// cancelled; one attempt per finished notification), then requests every console page in-process
// (app.request, the same handlers `notify start` serves) and prints p50/p95/max per page.
//   pnpm build && node --enable-source-maps bench/dist/console-pages.js [rows]
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { createApp, generateApiKey, hashApiKey } from '@notify/api';
import { ensureDatabase, migrateToLatest, withDatabase } from '@notify/migrations';
import { createDb } from '@notify/runtime';

const ROWS = Number(process.argv[2] ?? 1_000_000);
const RUNS = 30;
const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `notify_console_bench_${randomBytes(3).toString('hex')}`;
const url = withDatabase(server, name);

async function main(): Promise<void> {
  await ensureDatabase(url);
  const db = createDb({ connectionString: url, max: 4, applicationName: 'console-bench' });
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  try {
    await migrateToLatest(db);
    const t0 = performance.now();
    await pool.query(
      `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, dead_reason, attempts, max_attempts,
                                  next_attempt_at, last_error, expires_at, created_at, updated_at, sent_at)
       SELECT 'ntf_' || notify_ulid((extract(epoch FROM ts) * 1000)::bigint, decode(md5(i::text), 'hex')),
              'bench', ch, 'user' || (i % 50000) || '@example.com', 'hello', st,
              CASE WHEN st = 'dead' THEN (ARRAY['permanent','exhausted','expired','permanent'])[1 + i % 4] END,
              CASE WHEN st IN ('sent','dead') THEN 1 ELSE 0 END, 3,
              CASE WHEN st = 'queued' THEN ts + interval '1 minute' END,
              CASE WHEN st = 'dead' THEN (ARRAY['HTTP 410','HTTP 500','timeout','550 5.1.1 unknown user'])[1 + i % 4] END,
              ts + interval '31 days', ts, ts + interval '1 second',
              CASE WHEN st = 'sent' THEN ts + interval '1 second' END
         FROM (SELECT i, now() - (i::double precision / $1) * interval '30 days' AS ts,
                      (ARRAY['email','sms','webhook'])[1 + i % 3] AS ch,
                      CASE WHEN i % 100 < 90 THEN 'sent' WHEN i % 100 < 95 THEN 'dead' WHEN i % 100 < 99 THEN 'queued' ELSE 'cancelled' END AS st
                 FROM generate_series(1, $1) AS i) s`,
      [ROWS],
    );
    await pool.query(
      `INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome, error, provider_status)
       SELECT id, 1, created_at, created_at + interval '1 second',
              CASE WHEN state = 'sent' THEN 'sent' ELSE 'permanent' END, last_error, CASE WHEN state = 'sent' THEN '200' ELSE '410' END
         FROM notifications WHERE state IN ('sent', 'dead')`,
    );
    await pool.query(`INSERT INTO suppressions (tenant_id, channel, recipient, category, created_at)
                      SELECT 'bench', 'email', 'user' || i || '@example.com', '*', now() FROM generate_series(1, 10000) i`);
    await pool.query(`INSERT INTO templates (tenant_id, name, version, channel, body, created_at)
                      SELECT 'bench', 'tpl' || (i % 20), i / 20 + 1, 'email', 'Hi {{name}}', now() FROM generate_series(0, 199) i`);
    await pool.query('VACUUM ANALYZE');
    const seeded = (performance.now() - t0) / 1000;

    const key = generateApiKey();
    await pool.query('INSERT INTO api_keys (id, tenant_id, key_hash, created_at) VALUES ($1, $2, $3, now())', [
      key.id,
      'bench',
      hashApiKey(key.key),
    ]);
    const app = createApp({ db, config: { retry: { maxAttempts: 3, defaultTtlMs: 86_400_000 } } });
    const login = await app.request('/console/login', { method: 'POST', body: new URLSearchParams({ api_key: key.key }) });
    const cookie = /notify_console=[^;]+/.exec(login.headers.get('set-cookie') ?? '')![0];
    const { rows: one } = await pool.query("SELECT id FROM notifications WHERE state = 'dead' ORDER BY id DESC LIMIT 1");
    const { rows: oldest } = await pool.query('SELECT id FROM notifications ORDER BY id LIMIT 1 OFFSET 100');
    const cursor = Buffer.from(oldest[0].id as string).toString('base64url');
    const day = new Date(Date.now() - 15 * 86_400_000).toISOString().slice(0, 10);
    const pages: [string, string][] = [
      ['Notifications, newest', '/console/notifications'],
      ['Notifications by recipient', '/console/notifications?to=user123%40example.com'],
      ['Notifications, state dead', '/console/notifications?state=dead'],
      ['Notifications, channel sms', '/console/notifications?channel=sms'],
      ['Notifications, one day', `/console/notifications?from=${day}&until=${day}T23:59`],
      ['Notifications, last page (cursor)', `/console/notifications?cursor=${cursor}`],
      ['Notification detail', `/console/notifications/${one[0].id as string}`],
      ['Dead, grouped', '/console/dead'],
      ['Templates', '/console/templates'],
      ['Opt-outs', '/console/opt-outs'],
      ['Pipeline health', '/console/health'],
    ];
    console.log(`seeded ${ROWS} notifications in ${seeded.toFixed(0)} s; ${RUNS} requests per page after 3 warm-ups\n`);
    console.log('| page | p50 ms | p95 ms | max ms |\n| --- | --- | --- | --- |');
    for (const [label, path] of pages) {
      const times: number[] = [];
      for (let i = 0; i < RUNS + 3; i++) {
        const start = performance.now();
        const res = await app.request(path, { headers: { cookie } });
        await res.text();
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        if (i >= 3) times.push(performance.now() - start);
      }
      times.sort((a, b) => a - b);
      const at = (q: number) => times[Math.min(times.length - 1, Math.ceil(q * times.length) - 1)]!.toFixed(1);
      console.log(`| ${label} | ${at(0.5)} | ${at(0.95)} | ${times[times.length - 1]!.toFixed(1)} |`);
    }
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
