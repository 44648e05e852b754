import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `apiKeyList`. */
export interface ApiKeyListParams {
  /** Only this tenant's keys; every key when undefined. */
  readonly tenantId?: string | undefined;
}

/** An API key as listed: never the hash, never the key. */
export interface ApiKeyListing {
  readonly id: string;
  readonly tenant_id: string;
  readonly name: string | null;
  readonly created_at: Date;
  readonly revoked_at: Date | null;
}

/** The keys, oldest first. The table is small (a few keys per tenant), so no index serves this. */
export async function apiKeyList(db: SqlExecutor, params: ApiKeyListParams): Promise<ApiKeyListing[]> {
  const { rows } = await db.query<ApiKeyListing>(
    `SELECT id, tenant_id, name, created_at, revoked_at FROM api_keys
      WHERE $1::text IS NULL OR tenant_id = $1 ORDER BY created_at, id`,
    [params.tenantId ?? null],
  );
  return rows;
}
