import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `apiKeyRevoke`. */
export interface ApiKeyRevokeParams {
  readonly id: string;
  readonly now: Date;
}

/** Marks a key revoked (keeps the first revocation time). Returns the key's tenant, or undefined when no key has this id. */
export async function apiKeyRevoke(
  db: SqlExecutor,
  params: ApiKeyRevokeParams,
): Promise<{ tenant_id: string; revoked_at: Date } | undefined> {
  const { rows } = await db.query<{ tenant_id: string; revoked_at: Date }>(
    'UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING tenant_id, revoked_at',
    [params.id, params.now],
  );
  return rows[0];
}
