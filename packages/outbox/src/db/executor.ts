import { CompiledQuery, type Kysely, type Transaction } from 'kysely';

/**
 * The subset of a database connection that our SQL operations need: one parameterised query.
 * `enqueue` and the `sql/` operations take this shape, so they run inside any caller's
 * transaction, whether it is a Kysely `Transaction` or a raw `pg` client after `BEGIN`.
 */
export interface SqlExecutor {
  query<R = Record<string, unknown>>(text: string, values: readonly unknown[]): Promise<{ rows: R[] }>;
}

/** The part of a `pg` Client / PoolClient / Pool that we use. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[] }>;
}

/** Adapts a Kysely instance or transaction. */
export function fromKysely(db: Kysely<any> | Transaction<any>): SqlExecutor {
  return {
    async query<R>(text: string, values: readonly unknown[]) {
      const result = await db.executeQuery<R>(CompiledQuery.raw(text, [...values]));
      return { rows: [...result.rows] };
    },
  };
}

/** Adapts a `pg` client (inside the caller's `BEGIN … COMMIT`) or pool. */
export function fromPgClient(client: PgQueryable): SqlExecutor {
  return {
    async query<R>(text: string, values: readonly unknown[]) {
      const result = await client.query(text, [...values]);
      return { rows: result.rows as R[] };
    },
  };
}

/** Anything `enqueue` accepts as "the caller's transaction". */
export type TransactionLike = Kysely<any> | Transaction<any> | PgQueryable | SqlExecutor;

/** Picks the adapter by shape: Kysely has `executeQuery`; our `SqlExecutor` and pg both have `query`. */
export function toExecutor(tx: TransactionLike): SqlExecutor {
  if (typeof (tx as Kysely<any>).executeQuery === 'function') return fromKysely(tx as Kysely<any>);
  return tx as SqlExecutor;
}
