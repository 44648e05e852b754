import type { SqlExecutor } from '@notify/outbox';

/**
 * Removes the tenant's callback endpoint and its pending deliveries (delivered and failed ones stay
 * until retention). True when there was one.
 */
export async function callbackEndpointDelete(db: SqlExecutor, params: { readonly tenantId: string }): Promise<boolean> {
  const { rows } = await db.query<{ n: number }>(
    `WITH gone AS (DELETE FROM callback_endpoints WHERE tenant_id = $1 RETURNING tenant_id),
          pending AS (DELETE FROM callback_deliveries d USING gone WHERE d.tenant_id = gone.tenant_id AND d.state = 'pending')
     SELECT count(*)::int AS n FROM gone`,
    [params.tenantId],
  );
  return (rows[0]?.n ?? 0) > 0;
}
