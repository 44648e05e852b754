import { Migrator } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqlFileMigrationProvider, migrateToLatest } from '@notify/migrations';
import type { SqlExecutor } from '@notify/outbox';
import { type TestDatabase, createEmptyTestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { explain, recordStatements } from '../../../test/support/plans.js';
import { notificationList } from '../src/sql/notification-list.js';
import { notificationPage } from '../src/console/sql/notification-page.js';

// Migration 0310: the per-tenant list indexes end in `id` ascending. Ids grow with time, so a
// tenant's new rows are the largest keys of their range: the pages fill up (in descending order
// every insert landed at the left end of the range and each split left a half-full page behind),
// and the lists' `ORDER BY id DESC` reads the index backwards, without a sort.

let tdb: TestDatabase;

/** Inserts `n` notifications in id order, as enqueues over time would: every 10th of tenant `acme`, every 3rd sent. */
async function insertInIdOrder(n: number): Promise<void> {
  await tdb.pool.query(
    `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, max_attempts, next_attempt_at, sent_at,
                                expires_at, created_at, updated_at)
     SELECT 'ntf_' || lpad(g::text, 22, '0'), CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'other' END,
            CASE WHEN g % 4 = 0 THEN 'sms' ELSE 'email' END, 'user' || (g % 50) || '@example.com', 'hi',
            CASE WHEN g % 3 = 0 THEN 'sent' ELSE 'queued' END, 8,
            CASE WHEN g % 3 = 0 THEN NULL ELSE now() END, CASE WHEN g % 3 = 0 THEN now() END,
            now() + interval '1 day', now(), now()
       FROM generate_series(1, $1::int) AS g ORDER BY g`,
    [n],
  );
}

/** The plan of the statement `run` sends (explained, not executed). */
async function planOf(run: (db: SqlExecutor) => Promise<unknown>): Promise<string> {
  const statements = await recordStatements(run);
  expect(statements).toHaveLength(1);
  return explain(tdb.pool, statements[0]!.text, statements[0]!.values);
}

beforeAll(async () => {
  tdb = await createTestDatabase();
  // What the four indexes were before 0310, kept beside them here as the control.
  await tdb.pool.query('CREATE INDEX control_tenant_id_desc_idx ON notifications (tenant_id, id DESC)');
  await tdb.pool.query('CREATE EXTENSION IF NOT EXISTS pgstattuple');
  await insertInIdOrder(30_000);
  await tdb.pool.query('VACUUM ANALYZE notifications');
});

afterAll(async () => {
  await tdb?.close();
});

describe('the per-tenant list indexes (0310)', () => {
  it('are the four ascending ones, and no index of notifications is descending', async () => {
    const { rows } = await tdb.pool.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'notifications' AND indexname NOT LIKE 'control_%' ORDER BY indexname`,
    );
    const defs = new Map(rows.map((r) => [r.indexname, r.indexdef]));
    expect(defs.get('notifications_tenant_id_asc_idx')).toMatch(/\(tenant_id, id\)$/);
    expect(defs.get('notifications_tenant_recipient_asc_idx')).toMatch(/\(tenant_id, recipient, id\)$/);
    expect(defs.get('notifications_tenant_state_asc_idx')).toMatch(/\(tenant_id, state, id\)$/);
    expect(defs.get('notifications_tenant_channel_asc_idx')).toMatch(/\(tenant_id, channel, id\)$/);
    for (const old of ['tenant_id', 'tenant_recipient', 'tenant_state', 'tenant_channel']) {
      expect(defs.has(`notifications_${old}_idx`)).toBe(false);
    }
    expect(rows.filter((r) => /DESC/.test(r.indexdef))).toEqual([]);
  });

  it('fill their leaf pages as rows arrive in id order, where the descending one left them half full', async () => {
    const density = async (index: string) =>
      (await tdb.pool.query<{ d: number }>('SELECT avg_leaf_density AS d FROM pgstatindex($1)', [index])).rows[0]!.d;
    const ascending = await density('notifications_tenant_id_asc_idx');
    const descending = await density('control_tenant_id_desc_idx');
    expect(ascending).toBeGreaterThan(80);
    expect(descending).toBeLessThan(65);
  });

  it('serve the lists newest first by a backward index scan, without a sort', async () => {
    // The cursor's page may as well walk the primary key back from the cursor (the planner's
    // choice with this data): either way backwards, without a sort.
    const cases: [string, (db: SqlExecutor) => Promise<unknown>][] = [
      ['notifications_tenant_id_asc_idx', (db) => notificationList(db, { tenantId: 'acme', limit: 50 })],
      ['', (db) => notificationList(db, { tenantId: 'acme', beforeId: 'ntf_0000000000000000020000', limit: 50 })],
      ['notifications_tenant_state_asc_idx', (db) => notificationPage(db, { tenantId: 'acme', filter: { state: 'sent' }, limit: 50 })],
      ['notifications_tenant_channel_asc_idx', (db) => notificationPage(db, { tenantId: 'acme', filter: { channel: 'sms' }, limit: 50 })],
    ];
    for (const [index, run] of cases) {
      const plan = await planOf(run);
      expect(plan).toContain(`Index Scan Backward using ${index}`.trim());
      expect(plan).not.toMatch(/Sort|Seq Scan/);
    }
    const page = await notificationList(tdb.pool, { tenantId: 'acme', filter: { state: 'sent' }, limit: 5 });
    expect(page.map((n) => n.id)).toEqual([
      'ntf_0000000000000000030000',
      'ntf_0000000000000000029970',
      'ntf_0000000000000000029940',
      'ntf_0000000000000000029910',
      'ntf_0000000000000000029880',
    ]);
  });
});

describe('migration 0310 over an index built beforehand', () => {
  it('refuses an invalid one (a CONCURRENTLY build that failed) and keeps the old indexes, then takes a valid one', async () => {
    const fresh = await createEmptyTestDatabase();
    try {
      const migrator = new Migrator({ db: fresh.db, provider: new SqlFileMigrationProvider(), allowUnorderedMigrations: true });
      expect((await migrator.migrateTo('0300_webhook_port_plain')).error).toBeUndefined();
      const indexes = async () =>
        (
          await fresh.pool.query<{ indexname: string }>(
            `SELECT indexname FROM pg_indexes WHERE tablename = 'notifications' AND indexname ~ '^notifications_tenant_(id|recipient|state|channel)_'
              ORDER BY indexname`,
          )
        ).rows.map((r) => r.indexname);
      // What an interrupted CREATE INDEX CONCURRENTLY leaves behind: the index, marked invalid.
      await fresh.pool.query('CREATE INDEX notifications_tenant_state_asc_idx ON notifications (tenant_id, state, id)');
      await fresh.pool.query(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'notifications_tenant_state_asc_idx'::regclass`);
      await expect(migrateToLatest(fresh.db)).rejects.toThrow(/0310: notifications_tenant_state_asc_idx invalid/);
      expect(await indexes()).toEqual([
        'notifications_tenant_channel_idx',
        'notifications_tenant_id_idx',
        'notifications_tenant_recipient_idx',
        'notifications_tenant_state_asc_idx',
        'notifications_tenant_state_idx',
      ]);
      // Built again, valid: the migration keeps it and builds the other three.
      await fresh.pool.query('DROP INDEX notifications_tenant_state_asc_idx');
      await fresh.pool.query('CREATE INDEX CONCURRENTLY notifications_tenant_state_asc_idx ON notifications (tenant_id, state, id)');
      await migrateToLatest(fresh.db);
      expect(await indexes()).toEqual([
        'notifications_tenant_channel_asc_idx',
        'notifications_tenant_id_asc_idx',
        'notifications_tenant_recipient_asc_idx',
        'notifications_tenant_state_asc_idx',
      ]);
    } finally {
      await fresh.close();
    }
  });
});
