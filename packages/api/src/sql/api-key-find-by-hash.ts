import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `apiKeyFindByHash`. */
export interface ApiKeyFindByHashParams {
  /** sha256 hex of the presented key. */
  readonly keyHash: string;
}

/** An API key row as the auth middleware needs it. */
export interface ApiKeyRecord {
  readonly id: string;
  readonly tenant_id: string;
  readonly key_hash: string;
  readonly revoked_at: Date | null;
}

/** The key stored under this hash, revoked or not (the caller decides), or undefined. Served by the unique index on key_hash. */
export async function apiKeyFindByHash(db: SqlExecutor, params: ApiKeyFindByHashParams): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRecord>('SELECT id, tenant_id, key_hash, revoked_at FROM api_keys WHERE key_hash = $1', [
    params.keyHash,
  ]);
  return rows[0];
}
