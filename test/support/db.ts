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
  return createDatabase(inject('databaseTemplate'));
}

/** A new database without the schema, for a test that migrates it itself (to a given migration, say). */
export async function createEmptyTestDatabase(): Promise<TestDatabase> {
  return createDatabase(undefined);
}

/** Creates a database (from `template`, or the server's default), connects to it; `close()` drops it. */
async function createDatabase(template: string | undefined): Promise<TestDatabase> {
  const serverUrl = inject('databaseUrl');
  const name = `${inject('runId')}_${randomBytes(4).toString('hex')}`;
  const admin = async (statement: string) => {
    const client = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
    await client.connect();
    try {
      await client.query(statement);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${pg.escapeIdentifier(name)}${template === undefined ? '' : ` TEMPLATE ${pg.escapeIdentifier(template)}`}`);
  return connectTestDatabase(withDatabase(serverUrl, name), () =>
    admin(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`),
  );
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
