import type { SqlExecutor } from '@notify/outbox';
import type { EndpointState } from '../endpoint.js';

/** What a dispatcher needs to know of an endpoint before an attempt. */
export interface EndpointGateRow {
  readonly id: string;
  /** Null when the endpoint has no row yet (never answered): it is ok. */
  readonly state: EndpointState | null;
  readonly probe_at: Date | null;
  /** The endpoint's rate limit override, if any. */
  readonly rate_limit: string | null;
  /** The tenant's delivery rate limit override (`tenants.delivery_rate_limit`), if any. */
  readonly tenant_rate_limit: string | null;
}

/** Parameters of `endpointGetMany`. */
export interface EndpointGetManyParams {
  readonly ids: readonly string[];
  /** The tenant of each id, same order. */
  readonly tenantIds: readonly string[];
}

/** Reads several endpoints' gate state in one query; one row per id given, in that order. */
export async function endpointGetMany(db: SqlExecutor, params: EndpointGetManyParams): Promise<EndpointGateRow[]> {
  const { rows } = await db.query<EndpointGateRow>(
    `SELECT i.id, e.state, e.probe_at, e.rate_limit, t.delivery_rate_limit AS tenant_rate_limit
       FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS i(id, tenant_id, ord)
       LEFT JOIN endpoints e ON e.id = i.id
       LEFT JOIN tenants t ON t.id = i.tenant_id
      ORDER BY i.ord`,
    [params.ids, params.tenantIds],
  );
  return rows;
}
