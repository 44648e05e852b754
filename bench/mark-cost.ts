// What settling a published delivery request costs PostgreSQL, mark and later purge together
// (session 15, migration 0280): the relay's statement (`outboxMarkPublished`: DELETE the row and
// record it in outbox_published) and the purge's, against the statements they replaced (UPDATE
// outbox SET published_at, and the purge's DELETE of the marked row). Seeds 2,000 enqueued
// notifications (notify_enqueue_item, as the API writes them), then for batches of 1,000 and 20
// requests runs each pair under EXPLAIN (ANALYZE, WAL) in a transaction it rolls back, the two
// kinds alternating, 6 rounds each (the first is dropped); prints medians.
//   pnpm build && tsc -p bench/tsconfig.json && node bench/dist/mark-cost.js
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase, migrateToLatest, withDatabase } from '@notify/migrations';
import { createDb } from '@notify/runtime';

const server = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const name = `notify_mark_cost_${randomBytes(3).toString('hex')}`;
const url = withDatabase(server, name);

const PAIRS = {
  'UPDATE published_at, purge DELETE (before 0280)': [
    `UPDATE outbox SET published_at = $1 WHERE id = ANY($2::bigint[]) AND published_at IS NULL`,
    `DELETE FROM outbox WHERE id IN (SELECT id FROM outbox WHERE published_at IS NOT NULL AND published_at < $1 ORDER BY published_at)`,
  ],
  'DELETE + record, purge of the record (0280)': [
    `WITH kept AS (DELETE FROM outbox WHERE id = ANY($2::bigint[]) AND published_at IS NULL
                   RETURNING id, headers->>'notification-id' AS notification_id, topic, key)
     INSERT INTO outbox_published (outbox_id, notification_id, topic, key, published_at)
     SELECT id, notification_id, topic, key, $1 FROM kept`,
    `DELETE FROM outbox_published WHERE ctid = ANY(ARRAY(SELECT ctid FROM outbox_published WHERE published_at < $1 ORDER BY published_at))`,
  ],
} as const;
type Kind = keyof typeof PAIRS;

interface Sample {
  readonly markMs: number;
  readonly purgeMs: number;
  readonly walRecords: number;
  readonly walBytes: number;
}

async function explain(c: pg.Client, text: string, params: unknown[]): Promise<{ ms: number; records: number; bytes: number }> {
  const { rows } = await c.query<{ 'QUERY PLAN': [{ 'Execution Time': number; Plan: Record<string, number> }] }>(
    `EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${text}`,
    params,
  );
  const top = rows[0]!['QUERY PLAN'][0];
  return { ms: top['Execution Time'], records: top.Plan['WAL Records'] ?? 0, bytes: top.Plan['WAL Bytes'] ?? 0 };
}

async function main(): Promise<void> {
  await ensureDatabase(url);
  const db = createDb({ connectionString: url, max: 1, applicationName: 'mark-cost' });
  await migrateToLatest(db);
  await db.destroy();
  const c = new pg.Client(url);
  await c.connect();
  try {
    for (let i = 0; i < 2_000; i++) {
      const intent = { tenant_id: 'bench', channel: 'webhook', to: 'https://example.com/hook', body: `hello ${i} ${'x'.repeat(200)}` };
      await c.query(`SELECT notify_enqueue_item($1::jsonb)`, [
        JSON.stringify({ ...intent, traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` }),
      ]);
    }
    await c.query('VACUUM ANALYZE outbox');
    const ids = (await c.query<{ id: string }>(`SELECT id FROM outbox WHERE topic = 'requests' ORDER BY id`)).rows.map((r) => r.id);
    const now = new Date();
    const later = new Date(now.getTime() + 1_000);
    for (const size of [1_000, 20]) {
      const samples = new Map<Kind, Sample[]>();
      const kinds = Object.keys(PAIRS) as Kind[];
      for (let round = 0; round < 6; round++) {
        for (const kind of round % 2 ? kinds : [...kinds].reverse()) {
          const [mark, purge] = PAIRS[kind];
          await c.query('BEGIN');
          const m = await explain(c, mark, [now, ids.slice(0, size)]);
          const p = await explain(c, purge, [later]);
          await c.query('ROLLBACK');
          if (round === 0) continue;
          const list = samples.get(kind) ?? [];
          list.push({ markMs: m.ms, purgeMs: p.ms, walRecords: (m.records + p.records) / size, walBytes: (m.bytes + p.bytes) / size });
          samples.set(kind, list);
        }
      }
      for (const [kind, list] of samples) {
        const median = (f: (s: Sample) => number) => list.map(f).sort((a, b) => a - b)[Math.floor(list.length / 2)]!;
        console.log(
          `${size} rows, ${kind}: mark ${median((s) => s.markMs).toFixed(2)} ms, purge ${median((s) => s.purgeMs).toFixed(2)} ms; ` +
            `per row ${median((s) => s.walRecords).toFixed(2)} WAL records, ${median((s) => s.walBytes).toFixed(0)} WAL bytes`,
        );
      }
    }
  } finally {
    await c.end();
    const admin = new pg.Client({ connectionString: withDatabase(server, 'postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
