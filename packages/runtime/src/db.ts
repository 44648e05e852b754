import { Kysely, PostgresDialect, type PostgresPool } from 'kysely';
import pg from 'pg';
import type { Database } from '@notify/migrations';
import { preparedName } from '@notify/outbox';

// int8 (bigint) stays a string: outbox ids can exceed 2^53 in a long-lived system.
// timestamptz → Date and jsonb → objects are pg's defaults.

/** Options for `createDb`. */
export interface CreateDbOptions {
  readonly connectionString: string;
  /** Pool size. Default 10. */
  readonly max?: number;
  /** `application_name` shown in pg_stat_activity, e.g. "notify-relay". */
  readonly applicationName?: string;
  /**
   * The longest a query waits for a connection (a free one of the pool, or a new one being
   * opened) before it fails with "timeout exceeded when trying to connect". Default 0: no bound.
   */
  readonly connectionWaitMs?: number;
}

/** A Kysely instance over a `pg` pool. Close it with `db.destroy()`. */
export function createDb(options: CreateDbOptions): Kysely<Database> {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    application_name: options.applicationName ?? 'notify',
    connectionTimeoutMillis: options.connectionWaitMs ?? 0,
  });
  // A client that loses its connection (server restart, pg_terminate_backend, an idle-in-transaction
  // timeout) emits 'error': on the pool when idle, on the client itself when checked out (e.g. the
  // relay's claim transaction while its batch is in Kafka). Without a listener either one crashes the
  // process; with them, the query in progress fails (and is retried by its caller) and the pool
  // replaces the client. Found by the pg_terminate_backend chaos scenario.
  pool.on('error', () => {});
  pool.on('connect', (client) => {
    client.on('error', () => {});
  });
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool: preparingPool(pool) }) });
}

/**
 * The pool Kysely sees: the same clients, except that a hot statement (text starting with
 * `/* prepared:NAME *\/`, see `SqlExecutor`) runs as a named prepared statement. Measured on
 * `enqueue`'s one-statement insert: ~40 % less PostgreSQL CPU per call, 1.5–1.7× throughput
 * (BENCHMARKS.md, enqueue). Needs session-level connections (not a transaction-pooling proxy).
 */
function preparingPool(pool: pg.Pool): PostgresPool {
  return {
    async connect() {
      const client = (await pool.connect()) as pg.PoolClient & { notifyPreparing?: true };
      if (!client.notifyPreparing) {
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as { query: unknown }).query = (config: unknown, values?: unknown) => {
          const name = typeof config === 'string' ? preparedName(config) : undefined;
          return name ? query({ name, text: config, values }) : query(config, values);
        };
        client.notifyPreparing = true;
      }
      return client;
    },
    end: () => pool.end(),
  };
}
