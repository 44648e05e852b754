import type { SqlExecutor } from '@notify/outbox';
import { ENDPOINT_COLUMNS, type EndpointRecord } from '../../sql/endpoint-get.js';

/** What the health page shows of a tenant's endpoints. */
export interface EndpointsNotOk {
  /** Open or disabled, the latest to stop delivering first, at most `limit`. */
  readonly rows: EndpointRecord[];
  /** How many are open or disabled in all. */
  readonly count: number;
  /** Whether the tenant has any endpoint (a row exists once a delivery to it answered). */
  readonly any: boolean;
}

/**
 * The tenant's endpoints whose circuit is open or that are disabled (docs/endpoints.md), for the
 * health page. A range of `endpoints_tenant_idx` (tenant_id, id) with the state as a filter: a
 * tenant has one endpoint per webhook origin and provider, so a few thousand rows at most, and
 * the ones not ok are few (`endpoints_not_ok_idx` is per channel across tenants, for the gauge).
 */
export async function endpointNotOkList(
  db: SqlExecutor,
  params: { readonly tenantId: string; readonly limit: number },
): Promise<EndpointsNotOk> {
  const { rows } = await db.query<EndpointRecord & { count: number }>(
    `SELECT ${ENDPOINT_COLUMNS}, count(*) OVER ()::int AS count
       FROM endpoints
      WHERE tenant_id = $1 AND state <> 'ok'
      ORDER BY coalesce(disabled_at, opened_at) DESC NULLS LAST, id
      LIMIT $2`,
    [params.tenantId, params.limit],
  );
  if (rows.length > 0) return { rows: rows.map(({ count: _, ...r }) => r), count: rows[0]!.count, any: true };
  const some = await db.query('SELECT 1 FROM endpoints WHERE tenant_id = $1 LIMIT 1', [params.tenantId]);
  return { rows: [], count: 0, any: some.rows.length > 0 };
}
