import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `apiKeyInsert`. */
export interface ApiKeyInsertParams {
  readonly id: string;
  readonly tenantId: string;
  /** sha256 hex of the key; the key itself is never stored. */
  readonly keyHash: string;
  readonly name: string | null;
  readonly now: Date;
}

/**
 * Stores a key's hash for a tenant. Returns false (and changes nothing) when a key with the same
 * hash exists already, so seeding NOTIFY_API_KEYS at every start is idempotent.
 */
export async function apiKeyInsert(db: SqlExecutor, params: ApiKeyInsertParams): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO api_keys (id, tenant_id, key_hash, name, created_at) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT ON CONSTRAINT api_keys_key_hash_unique DO NOTHING
     RETURNING id`,
    [params.id, params.tenantId, params.keyHash, params.name, params.now],
  );
  return rows.length === 1;
}
