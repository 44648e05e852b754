import type { SqlExecutor } from '@notify/outbox';

/** A statement an executor was asked to run. */
export interface RecordedStatement {
  readonly text: string;
  readonly values: readonly unknown[];
}

/** Anything that runs a statement with parameters: a pg pool, client or pool client. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** The statements `run` sends, recorded instead of run (each one is answered with no rows). */
export async function recordStatements(run: (db: SqlExecutor) => Promise<unknown>): Promise<RecordedStatement[]> {
  const statements: RecordedStatement[] = [];
  await run({
    query: async (text, values) => {
      statements.push({ text, values: values ?? [] });
      return { rows: [] };
    },
  });
  return statements;
}

/** EXPLAIN's output for `sql` (with `values`, a custom plan), its lines joined. Runs nothing. */
export async function explain(db: Queryable, sql: string, values: readonly unknown[] = []): Promise<string> {
  const { rows } = await db.query(`EXPLAIN ${sql}`, [...values]);
  return (rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
}

/** Each estimate in a plan's text (EXPLAIN's or auto_explain's), in order: a node's total cost and rows. */
export function estimates(plan: string): { cost: number; rows: number }[] {
  return [...plan.matchAll(/cost=[\d.]+\.\.([\d.]+) rows=(\d+)/g)].map((m) => ({ cost: Number(m[1]), rows: Number(m[2]) }));
}

/**
 * The plan a session that prepared `statement` as `name` uses, explained with NULLs for its
 * parameters: under `plan_cache_mode = force_generic_plan` (the caller's to set) that is the
 * generic plan, which does not depend on the values. Runs nothing.
 */
export async function explainPrepared(db: Queryable, name: string, statement: RecordedStatement): Promise<string> {
  await db.query(`PREPARE ${name} AS ${statement.text}`);
  return explainExecute(db, name, statement);
}

/**
 * The plan the session's prepared statement `name` (already prepared, as `statement`) would run
 * now, explained with NULLs for its parameters: the plan it settled on, when it settled on its
 * generic one. Runs nothing.
 */
export async function explainExecute(db: Queryable, name: string, statement: RecordedStatement): Promise<string> {
  return explain(db, `EXECUTE ${name}(${statement.values.map(() => 'NULL').join(', ')})`);
}

/** Custom and generic plans made so far of this session's prepared statements whose name is LIKE `pattern`. */
export async function preparedPlanCounts(db: Queryable, pattern: string): Promise<{ generic: number; custom: number }[]> {
  const { rows } = await db.query(
    'SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name LIKE $1 ORDER BY name',
    [pattern],
  );
  return rows as { generic: number; custom: number }[];
}
