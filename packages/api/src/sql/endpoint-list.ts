import type { Channel, SqlExecutor } from '@notify/outbox';
import { ENDPOINT_COLUMNS, type EndpointRecord } from './endpoint-get.js';

/** Parameters of `endpointList`. */
export interface EndpointListParams {
  readonly tenantId: string;
  readonly state?: EndpointRecord['state'] | undefined;
  readonly channel?: Channel | undefined;
  /** Only ids after this one (the cursor). */
  readonly afterId?: string | undefined;
  readonly limit: number;
}

/**
 * A page of the tenant's endpoints in id order: keyset paging on `endpoints_tenant_idx`
 * (tenant_id, id), so a page is an index range scan however many endpoints the tenant has.
 */
export async function endpointList(db: SqlExecutor, params: EndpointListParams): Promise<EndpointRecord[]> {
  const { rows } = await db.query<EndpointRecord>(
    `SELECT ${ENDPOINT_COLUMNS}
       FROM endpoints
      WHERE tenant_id = $1
        AND ($2::text IS NULL OR state = $2)
        AND ($3::text IS NULL OR channel = $3)
        AND ($4::text IS NULL OR id > $4)
      ORDER BY id
      LIMIT $5`,
    [params.tenantId, params.state ?? null, params.channel ?? null, params.afterId ?? null, params.limit],
  );
  return rows;
}
