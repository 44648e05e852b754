import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrateToLatest } from '@notify/migrations';
import { type TestDatabase, createEmptyTestDatabase } from '../support/db.js';

// How `notify migrate` behaves in production (docs/operations.md, "Upgrading"): each migration in
// its own transaction, and a bounded lock wait, so that a migration never queues behind a long
// transaction while every write of the table queues behind it.
describe('migrateToLatest in production', () => {
  let fresh: TestDatabase;
  let dir: string;
  const ledger = async () =>
    (await fresh.pool.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name')).rows.map((r) => r.name);

  beforeEach(async () => {
    fresh = await createEmptyTestDatabase();
    dir = await mkdtemp(join(tmpdir(), 'notify-migrations-'));
    await writeFile(join(dir, '0001_table.sql'), 'CREATE TABLE t (x integer);');
  });
  afterEach(async () => {
    await fresh.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('commits each migration on its own: a failure leaves the ones before it applied, and a run after the fix goes on', async () => {
    await writeFile(join(dir, '0002_column.sql'), 'ALTER TABLE t ADD COLUMN y integer;');
    await writeFile(join(dir, '0003_broken.sql'), 'ALTER TABLE t ADD COLUMN z integer; SELECT 1 / 0;');
    await expect(migrateToLatest(fresh.db, { dir })).rejects.toThrow(/migration 0003_broken failed: division by zero/);
    expect(await ledger()).toEqual(['0001_table', '0002_column']);
    const columns = await fresh.pool.query<{ c: string }>(
      "SELECT attname AS c FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0 ORDER BY attnum",
    );
    expect(columns.rows.map((r) => r.c)).toEqual(['x', 'y']); // 0003's first statement rolled back with it
    await writeFile(join(dir, '0003_broken.sql'), 'ALTER TABLE t ADD COLUMN z integer;');
    expect((await migrateToLatest(fresh.db, { dir })).map((r) => r.migrationName)).toEqual(['0003_broken']);
    expect(await ledger()).toEqual(['0001_table', '0002_column', '0003_broken']);
  });

  describe('behind a long transaction', () => {
    let holder: pg.Client;
    beforeEach(async () => {
      await migrateToLatest(fresh.db, { dir });
      await writeFile(join(dir, '0002_strong_lock.sql'), 'ALTER TABLE t ADD COLUMN y integer;'); // ACCESS EXCLUSIVE
      holder = new pg.Client({ connectionString: fresh.url });
      await holder.connect();
      await holder.query('BEGIN');
      await holder.query('SELECT count(*) FROM t'); // ACCESS SHARE until the transaction ends
    });
    afterEach(async () => {
      await holder.end();
    });

    it('gives up its lock request instead of queueing writes behind it, and says why', async () => {
      const waits: number[] = [];
      const migrating = migrateToLatest(fresh.db, {
        dir,
        lockTimeoutMs: 50,
        lockAttempts: 3,
        retryDelayMs: () => 0,
        onLockTimeout: ({ attempt }) => void waits.push(attempt),
      });
      await expect(migrating).rejects.toThrow(
        /migration 0002_strong_lock waited 50 ms for a lock 3 times and was rolled back .*pg_stat_activity/,
      );
      expect(waits).toEqual([1, 2]);
      expect(await ledger()).toEqual(['0001_table']);
      // The long transaction is still open, and a write goes through: no lock request is left in the queue.
      await fresh.pool.query('INSERT INTO t VALUES (1)');
      await holder.query('COMMIT');
      await migrateToLatest(fresh.db, { dir });
      expect(await ledger()).toEqual(['0001_table', '0002_strong_lock']);
    });

    it('applies the migration on a later try once the transaction has ended', async () => {
      const migrating = migrateToLatest(fresh.db, {
        dir,
        lockTimeoutMs: 50,
        retryDelayMs: () => 0,
        onLockTimeout: async () => {
          await holder.query('COMMIT');
        },
      });
      expect((await migrating).map((r) => r.migrationName)).toEqual(['0002_strong_lock']);
      expect(await ledger()).toEqual(['0001_table', '0002_strong_lock']);
    });
  });
});
