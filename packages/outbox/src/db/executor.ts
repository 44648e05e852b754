import type { CompiledQuery as CompiledQueryClass } from 'kysely';

/**
 * What we use of a Kysely instance or transaction (of any schema): `executeQuery`, to run raw
 * SQL. Spelled out rather than imported, so that a project that passes a `pg` client type-checks
 * without kysely installed (an optional peer); `Kysely<DB>` and `Transaction<DB>` are this shape.
 */
export interface KyselyLike {
  executeQuery(query: object): Promise<{ readonly rows: readonly unknown[] }>;
}

/**
 * The subset of a database connection that our SQL operations need: one parameterised query.
 * `enqueue` and the `sql/` operations take this shape, so they run inside any caller's
 * transaction, whether it is a Kysely `Transaction` or a raw `pg` client after `BEGIN`.
 *
 * A query text that starts with `/* prepared:NAME *\/` is a hot statement: adapters that can
 * (a raw `pg` client, and pools made by `createDb`) run it as a named prepared statement, so
 * PostgreSQL parses and plans it once per connection instead of on every call.
 */
export interface SqlExecutor {
  query<R = Record<string, unknown>>(text: string, values: readonly unknown[]): Promise<{ rows: R[] }>;
}

/** The part of a `pg` Client / PoolClient / Pool that we use. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

const EXECUTOR = Symbol('notify.sqlExecutor');
// What an adapter adapts, so `inTransaction` can open a transaction on it when it is not in one.
const SOURCE = Symbol('notify.sqlExecutor.source');
const PREPARED = /^\/\* prepared:([A-Za-z0-9_.-]{1,60}) \*\//;

/** The statement name of a hot statement (see `SqlExecutor`), or undefined. */
export function preparedName(text: string): string | undefined {
  return PREPARED.exec(text)?.[1];
}

/** Marks `text` as a hot statement named `name`. */
export function prepared(name: string, text: string): string {
  return `/* prepared:${name} */ ${text}`;
}

// Kysely is an optional peer dependency: a caller that passes a Kysely transaction has it
// installed, and one that uses a raw `pg` client must not need it. So it is loaded on first use.
let compiledQuery: Promise<typeof CompiledQueryClass> | undefined;

/** Adapts a Kysely instance or transaction. */
export function fromKysely(db: KyselyLike): SqlExecutor {
  return {
    [EXECUTOR]: true,
    [SOURCE]: db,
    async query<R>(text: string, values: readonly unknown[]) {
      const CompiledQuery = await (compiledQuery ??= import('kysely').then((k) => k.CompiledQuery));
      const result = await db.executeQuery(CompiledQuery.raw(text, [...values]));
      return { rows: [...result.rows] as R[] };
    },
  } as SqlExecutor;
}

/** Adapts a `pg` client (inside the caller's `BEGIN … COMMIT`) or pool. Hot statements run as named prepared statements. */
export function fromPgClient(client: PgQueryable): SqlExecutor {
  const q = client.query.bind(client) as (config: unknown, values?: unknown[]) => Promise<{ rows: unknown[] }>;
  return {
    [EXECUTOR]: true,
    [SOURCE]: client,
    async query<R>(text: string, values: readonly unknown[]) {
      const name = preparedName(text);
      const result = name ? await q({ name, text, values: [...values] }) : await q(text, [...values]);
      return { rows: result.rows as R[] };
    },
  } as SqlExecutor;
}

/** Anything `enqueue` accepts as "the caller's transaction". */
export type TransactionLike = KyselyLike | PgQueryable | SqlExecutor;

/** Picks the adapter by shape: ours as they are, Kysely by `executeQuery`, anything else with `query` as a pg client. */
export function toExecutor(tx: TransactionLike): SqlExecutor {
  if ((tx as { [EXECUTOR]?: boolean })[EXECUTOR]) return tx as SqlExecutor;
  if (typeof (tx as KyselyLike).executeQuery === 'function') return fromKysely(tx as KyselyLike);
  return fromPgClient(tx as PgQueryable);
}

/** A Kysely instance or transaction, as `inTransaction` tells them apart (`isTransaction`) and opens one. */
interface KyselyTransactional extends KyselyLike {
  readonly isTransaction: boolean;
  transaction(): { execute<T>(fn: (trx: KyselyLike) => Promise<T>): Promise<T> };
}

/** A `pg` Pool: it hands out clients; each query of the pool itself may run on another one. */
interface PgPoolLike extends PgQueryable {
  readonly totalCount: number;
  connect(): Promise<PgQueryable & { release(err?: Error | boolean): void }>;
}

function isKysely(db: unknown): db is KyselyTransactional {
  const k = db as Partial<KyselyTransactional>;
  return typeof k.executeQuery === 'function' && typeof k.transaction === 'function' && typeof k.isTransaction === 'boolean';
}

function isPgPool(db: unknown): db is PgPoolLike {
  const p = db as Partial<PgPoolLike>;
  return typeof p.connect === 'function' && typeof p.totalCount === 'number';
}

/**
 * Runs `fn` inside a transaction: the caller's when `db` is (or adapts) one, else one it opens
 * and commits (rolled back when `fn` throws). For operations that need their statements in one
 * transaction, such as a transaction-level advisory lock and the reads that follow it.
 * - A Kysely transaction: `fn` runs in it; a Kysely instance: in `db.transaction()`.
 * - A `pg` Pool: on one of its clients, between BEGIN and COMMIT.
 * - Anything else (a `pg` client, our adapter of one, a `SqlExecutor` of your own) is taken as one
 *   connection: `fn` runs in its open transaction block, or between a BEGIN and COMMIT sent to it.
 *   (Whether a block is open is asked with a SAVEPOINT, which fails outside one.)
 */
export async function inTransaction<T>(db: TransactionLike, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  const source = (db as { [SOURCE]?: unknown })[SOURCE] ?? db;
  if (isKysely(source)) {
    return source.isTransaction ? fn(toExecutor(db)) : source.transaction().execute((trx) => fn(fromKysely(trx)));
  }
  if (isPgPool(source)) {
    const client = await source.connect();
    try {
      const result = await ownTransaction(fromPgClient(client), fn);
      client.release();
      return result;
    } catch (err) {
      // A client whose ROLLBACK failed may be in any state: the pool drops it instead of reusing it.
      client.release(err instanceof Error ? err : true);
      throw err;
    }
  }
  const exec = toExecutor(db);
  return (await inTransactionBlock(exec)) ? fn(exec) : ownTransaction(exec, fn);
}

async function ownTransaction<T>(exec: SqlExecutor, fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
  await exec.query('BEGIN', []);
  try {
    const result = await fn(exec);
    await exec.query('COMMIT', []);
    return result;
  } catch (err) {
    await exec.query('ROLLBACK', []).catch(() => {});
    throw err;
  }
}

/** Whether the connection has a transaction block open: a SAVEPOINT succeeds only inside one (SQLSTATE 25P01 outside). */
async function inTransactionBlock(exec: SqlExecutor): Promise<boolean> {
  try {
    await exec.query('SAVEPOINT notify_in_transaction', []);
  } catch (err) {
    if ((err as { code?: string }).code === '25P01') return false;
    throw err;
  }
  await exec.query('RELEASE SAVEPOINT notify_in_transaction', []);
  return true;
}
