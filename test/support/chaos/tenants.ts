import { randomBytes } from 'node:crypto';
import { hashApiKey } from '@notify/api';
import type { SqlExecutor } from '@notify/outbox';

/** A key issued for a test tenant: the key itself (what a client sends) and its stored id. */
export interface TestKey {
  readonly tenant: string;
  readonly id: string;
  readonly key: string;
}

/**
 * Stores a new API key for `tenant` the way the service does (tenant row, sha256 of the key; the
 * key itself is never stored), optionally revoked. The test keeps the key to send it.
 */
export async function issueTestKey(
  db: SqlExecutor,
  tenant: string,
  { revoked = false }: { readonly revoked?: boolean } = {},
): Promise<TestKey> {
  const key = `nk_${randomBytes(32).toString('base64url')}`;
  const id = `key_${randomBytes(9).toString('base64url')}`;
  await db.query('INSERT INTO tenants (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [tenant]);
  await db.query('INSERT INTO api_keys (id, tenant_id, key_hash, name, revoked_at) VALUES ($1, $2, $3, $4, $5)', [
    id,
    tenant,
    hashApiKey(key),
    'chaos',
    revoked ? new Date() : null,
  ]);
  return { tenant, id, key };
}

/**
 * Every text-like value stored anywhere in the database's public tables, one string per cell:
 * for "this secret is stored nowhere" checks, independent of which table someone adds later.
 */
export async function allStoredText(db: SqlExecutor): Promise<string[]> {
  const { rows: columns } = await db.query<{ table_name: string; column_name: string }>(
    `SELECT c.table_name, c.column_name FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
        AND c.data_type IN ('text', 'character varying', 'jsonb', 'json', 'bytea')`,
    [],
  );
  const out: string[] = [];
  for (const { table_name, column_name } of columns) {
    const { rows } = await db.query<{ v: string | null }>(
      `SELECT ${quoteIdent(column_name)}::text AS v FROM ${quoteIdent(table_name)} WHERE ${quoteIdent(column_name)} IS NOT NULL`,
      [],
    );
    for (const r of rows) if (r.v !== null) out.push(r.v);
  }
  return out;
}

function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
