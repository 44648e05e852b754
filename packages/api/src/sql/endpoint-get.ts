import type { Channel, SqlExecutor } from '@notify/outbox';

/** An `endpoints` row (migration 0090) as the API reads it. */
export interface EndpointRecord {
  readonly id: string;
  readonly channel: Channel;
  readonly origin: string;
  readonly provider: 'primary' | 'fallback';
  readonly state: 'ok' | 'open' | 'disabled';
  readonly consecutive_failures: number;
  readonly failing_since: Date | null;
  readonly last_error_code: string | null;
  readonly last_failure_at: Date | null;
  readonly last_success_at: Date | null;
  readonly opened_at: Date | null;
  readonly probe_at: Date | null;
  readonly disabled_at: Date | null;
  readonly disabled_by: 'auto' | 'operator' | null;
  readonly rate_limit: string | null;
  readonly created_at: Date;
  readonly updated_at: Date;
}

/** The columns of `EndpointRecord`, for the other endpoint statements. */
export const ENDPOINT_COLUMNS =
  'id, channel, origin, provider, state, consecutive_failures, failing_since, last_error_code, last_failure_at, ' +
  'last_success_at, opened_at, probe_at, disabled_at, disabled_by, rate_limit, created_at, updated_at';

/** Parameters of `endpointGet`. */
export interface EndpointGetParams {
  readonly tenantId: string;
  readonly id: string;
  /** Lock the row until the transaction ends (an operator action reads, decides, then writes). */
  readonly forUpdate?: boolean;
}

/** One of the tenant's endpoints; undefined when it does not exist or is another tenant's. */
export async function endpointGet(db: SqlExecutor, params: EndpointGetParams): Promise<EndpointRecord | undefined> {
  const { rows } = await db.query<EndpointRecord>(
    `SELECT ${ENDPOINT_COLUMNS} FROM endpoints WHERE id = $1 AND tenant_id = $2${params.forUpdate ? ' FOR UPDATE' : ''}`,
    [params.id, params.tenantId],
  );
  return rows[0];
}
