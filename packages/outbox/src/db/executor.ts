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
