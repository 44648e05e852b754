import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `callbackEndpointEvents`. */
export interface CallbackEndpointEventsParams {
  readonly tenantIds: readonly string[];
}

/**
 * The event types the callback endpoint of each of these tenants asked for, by tenant id; a tenant
 * without an endpoint is absent. One primary-key probe per tenant: the callback intake asks once
 * per Kafka batch for the tenants its events name, so that events nobody wants are skipped unread.
 */
export async function callbackEndpointEvents(
  db: SqlExecutor,
  params: CallbackEndpointEventsParams,
): Promise<Map<string, ReadonlySet<string>>> {
  const wanted = new Map<string, ReadonlySet<string>>();
  if (params.tenantIds.length === 0) return wanted;
  const { rows } = await db.query<{ tenant_id: string; events: string[] }>(
    'SELECT tenant_id, events FROM callback_endpoints WHERE tenant_id = ANY($1::text[])',
    [params.tenantIds],
  );
  for (const r of rows) wanted.set(r.tenant_id, new Set(r.events));
  return wanted;
}
