import type { SqlExecutor } from '@notify/outbox';
import type { EndpointAction } from './endpoint-action-list.js';

/** Appends one operator action to an endpoint's history, in the transaction that made the change. */
export async function endpointActionInsert(
  db: SqlExecutor,
  params: Omit<EndpointAction, 'occurred_at'> & { readonly endpointId: string; readonly now: Date },
): Promise<void> {
  await db.query(
    `INSERT INTO endpoint_actions (endpoint_id, action, from_state, to_state, rate_limit, api_key_id, occurred_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [params.endpointId, params.action, params.from_state, params.to_state, params.rate_limit, params.api_key_id, params.now],
  );
}
