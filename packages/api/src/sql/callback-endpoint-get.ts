import type { SqlExecutor } from '@notify/outbox';

/** The tenant's callback endpoint with its backlog counts. */
export interface CallbackEndpointRecord {
  readonly url: string;
  readonly events: string[];
  readonly created_at: Date;
  readonly updated_at: Date;
  readonly dropped: string;
  readonly last_dropped_at: Date | null;
  readonly pending: number;
  readonly failed: number;
}

/** The tenant's callback endpoint, or undefined. Counts use callback_deliveries_tenant_pending_idx (pending) and a scan of the tenant's failed rows. */
export async function callbackEndpointGet(
  db: SqlExecutor,
  params: { readonly tenantId: string },
): Promise<CallbackEndpointRecord | undefined> {
  const { rows } = await db.query<CallbackEndpointRecord>(
    `SELECT e.url, e.events, e.created_at, e.updated_at, e.dropped::text AS dropped, e.last_dropped_at,
            (SELECT count(*)::int FROM callback_deliveries d WHERE d.tenant_id = e.tenant_id AND d.state = 'pending') AS pending,
            (SELECT count(*)::int FROM callback_deliveries d WHERE d.tenant_id = e.tenant_id AND d.state = 'failed') AS failed
       FROM callback_endpoints e WHERE e.tenant_id = $1`,
    [params.tenantId],
  );
  return rows[0];
}
