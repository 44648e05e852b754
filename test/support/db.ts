import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import pg from 'pg';
import { inject } from 'vitest';
import { type Database } from '@notify/migrations';
import { createDb } from '@notify/runtime';
import { withDatabase } from '@notify/migrations';

/** A fresh migrated database for one test file. */
export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  readonly db: Kysely<Database>;
  /** A raw pg pool on the same database, for tests that need a plain client. */
  readonly pool: pg.Pool;
  /** Closes the pools and drops the database. */
  close(): Promise<void>;
}

/** Copies the run's migrated template into a new database (≈100 ms) and connects to it. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = inject('databaseUrl');
  const name = `${inject('runId')}_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${pg.escapeIdentifier(name)} TEMPLATE ${pg.escapeIdentifier(inject('databaseTemplate'))}`);
  } finally {
    await admin.end();
  }
  return connectTestDatabase(withDatabase(serverUrl, name), async () => {
    const a = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
    await a.connect();
    try {
      await a.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
    } finally {
      await a.end();
    }
  });
}

/**
 * Connects to an existing migrated database (e.g. on a private server a chaos scenario stops).
 * `close()` closes the pools, then runs `afterClose` (by default nothing: the database stays).
 */
export function connectTestDatabase(url: string, afterClose: () => Promise<void> = async () => {}): TestDatabase {
  const db = createDb({ connectionString: url, max: 10, applicationName: 'notify-test' });
  const pool = new pg.Pool({ connectionString: url, max: 10 });
  pool.on('error', () => {});
  return {
    url,
    name: new URL(url).pathname.slice(1),
    db,
    pool,
    async close() {
      await db.destroy();
      await pool.end();
      await afterClose();
    },
  };
}
