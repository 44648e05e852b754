import type { SqlExecutor } from '@notify/outbox';
import { ENDPOINT_COLUMNS, type EndpointRecord } from './endpoint-get.js';

/** What an operator changes on an endpoint. */
export type EndpointOperatorChange =
  /** Back to `ok`: the failure streak restarts and an open circuit closes. */
  | { readonly action: 'enable' }
  /** Disabled by the operator (`disabled_by = 'operator'`); an auto-disabled endpoint keeps its `disabled_at`. */
  | { readonly action: 'disable' }
  /** The endpoint's own rate limit; null clears it (NOTIFY_ENDPOINT_RATE_LIMIT applies). */
  | { readonly action: 'set_rate_limit'; readonly rateLimit: string | null };

const SET: Readonly<Record<EndpointOperatorChange['action'], string>> = {
  enable: `state = 'ok', consecutive_failures = 0, failing_since = NULL, opened_at = NULL, probe_at = NULL,
           disabled_at = NULL, disabled_by = NULL`,
  disable: `state = 'disabled', opened_at = NULL, probe_at = NULL, disabled_at = coalesce(disabled_at, $2), disabled_by = 'operator'`,
  set_rate_limit: 'rate_limit = $3',
};

/**
 * Applies an operator's change to an endpoint and returns the row after it. The dispatchers read
 * the new state within their state cache (1 s), so deliveries follow it from then on.
 */
export async function endpointOperatorUpdate(
  db: SqlExecutor,
  params: { readonly id: string; readonly change: EndpointOperatorChange; readonly now: Date },
): Promise<EndpointRecord> {
  const { change } = params;
  const { rows } = await db.query<EndpointRecord>(
    `UPDATE endpoints SET ${SET[change.action]}, updated_at = $2 WHERE id = $1 RETURNING ${ENDPOINT_COLUMNS}`,
    [params.id, params.now, ...(change.action === 'set_rate_limit' ? [change.rateLimit] : [])],
  );
  return rows[0]!;
}
