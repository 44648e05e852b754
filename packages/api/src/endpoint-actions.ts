import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { ENDPOINT_ID } from './endpoint-schemas.js';
import { endpointActionInsert } from './sql/endpoint-action-insert.js';
import { type EndpointRecord, endpointGet } from './sql/endpoint-get.js';
import { type EndpointOperatorChange, endpointOperatorUpdate } from './sql/endpoint-operator-update.js';

/** Whether `change` would change anything on `r` (a repeat does not: the actions are idempotent). */
function changes(r: EndpointRecord, change: EndpointOperatorChange): boolean {
  switch (change.action) {
    case 'enable':
      return r.state !== 'ok' || r.consecutive_failures !== 0 || r.failing_since !== null;
    case 'disable':
      return r.state !== 'disabled' || r.disabled_by !== 'operator';
    case 'set_rate_limit':
      return r.rate_limit !== change.rateLimit;
  }
}

/**
 * Applies an operator's change in one transaction: the row is locked, changed when the change
 * changes anything, and the action recorded (`endpoint_actions`) with the API key that asked.
 * Undefined when the tenant has no such endpoint.
 */
export async function applyEndpointChange(
  db: Kysely<Database>,
  params: {
    readonly tenantId: string;
    readonly id: string;
    readonly apiKeyId: string | null;
    readonly change: EndpointOperatorChange;
    readonly now: Date;
  },
): Promise<{ readonly endpoint: EndpointRecord; readonly changed: boolean } | undefined> {
  if (!ENDPOINT_ID.test(params.id)) return undefined;
  return db.transaction().execute(async (trx) => {
    const sql = fromKysely(trx);
    const before = await endpointGet(sql, { tenantId: params.tenantId, id: params.id, forUpdate: true });
    if (!before) return undefined;
    if (!changes(before, params.change)) return { endpoint: before, changed: false };
    const after = await endpointOperatorUpdate(sql, { id: params.id, change: params.change, now: params.now });
    await endpointActionInsert(sql, {
      endpointId: params.id,
      action: params.change.action,
      from_state: before.state,
      to_state: after.state,
      rate_limit: params.change.action === 'set_rate_limit' ? params.change.rateLimit : null,
      api_key_id: params.apiKeyId,
      now: params.now,
    });
    return { endpoint: after, changed: true };
  });
}
