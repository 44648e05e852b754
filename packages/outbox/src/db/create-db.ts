import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

// int8 (bigint) stays a string: outbox ids can exceed 2^53 in a long-lived system.
// timestamptz → Date and jsonb → objects are pg's defaults.

/** Options for `createDb`. */
export interface CreateDbOptions {
  readonly connectionString: string;
  /** Pool size. Default 10. */
  readonly max?: number;
  /** `application_name` shown in pg_stat_activity, e.g. "notify-relay". */
  readonly applicationName?: string;
}

/** A Kysely instance over a `pg` pool. Close it with `db.destroy()`. */
export function createDb(options: CreateDbOptions): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'notify',
  });
  // An idle client that loses its connection (server restart, pg_terminate_backend) emits 'error'
  // on the pool; without a listener that would crash the process. The pool replaces the client.
  pool.on('error', () => {});
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}
