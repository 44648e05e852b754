import type { SqlExecutor } from '@notify/outbox';

/** An `endpoint_actions` row (migration 0110). */
export interface EndpointAction {
  readonly action: 'enable' | 'disable' | 'set_rate_limit';
  readonly from_state: 'ok' | 'open' | 'disabled';
  readonly to_state: 'ok' | 'open' | 'disabled';
  /** set_rate_limit: the new override; null when cleared (and for enable, disable). */
  readonly rate_limit: string | null;
  readonly api_key_id: string | null;
  readonly occurred_at: Date;
}

/** An endpoint's operator actions, oldest first (at most the newest 1,000). */
export async function endpointActionList(db: SqlExecutor, params: { readonly endpointId: string }): Promise<EndpointAction[]> {
  const { rows } = await db.query<EndpointAction>(
    `SELECT action, from_state, to_state, rate_limit, api_key_id, occurred_at
       FROM (SELECT * FROM endpoint_actions WHERE endpoint_id = $1 ORDER BY id DESC LIMIT 1000) a
      ORDER BY id`,
    [params.endpointId],
  );
  return rows;
}
