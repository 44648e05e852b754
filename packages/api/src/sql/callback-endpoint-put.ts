import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `callbackEndpointPut`. */
export interface CallbackEndpointPutParams {
  readonly tenantId: string;
  readonly url: string;
  readonly events: readonly string[];
  readonly now: Date;
}

/** Registers or replaces the tenant's callback endpoint. True when it was created (not replaced). */
export async function callbackEndpointPut(db: SqlExecutor, params: CallbackEndpointPutParams): Promise<boolean> {
  const { rows } = await db.query<{ created: boolean }>(
    `INSERT INTO callback_endpoints AS e (tenant_id, url, events, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)
     ON CONFLICT (tenant_id) DO UPDATE SET url = excluded.url, events = excluded.events, updated_at = excluded.updated_at
     RETURNING (xmax = 0) AS created`,
    [params.tenantId, params.url, params.events, params.now],
  );
  return rows[0]?.created ?? false;
}
