import type { DeliveryRequestV1, StatusEventV1 } from './messages.js';
import { CONTRACT_VERSION } from './version.js';

// The field order below is the wire order and the golden tests pin it: consumers may hash or
// compare the bytes, so it never changes within a version.

/**
 * The JSON text of a delivery request, fields in wire order (`v`, `type`, `id`, `tenant_id`,
 * `channel`, `attempt`, `due_at`); fields the type does not name are left out. It does not
 * validate: `parseDeliveryRequest` the result when the input is not known to be good.
 */
export function serializeDeliveryRequest(message: DeliveryRequestV1): string {
  return JSON.stringify({
    v: CONTRACT_VERSION,
    type: 'notification.deliver',
    id: message.id,
    tenant_id: message.tenant_id,
    channel: message.channel,
    attempt: message.attempt,
    due_at: message.due_at,
  });
}

/**
 * The JSON text of a status event, fields in wire order (`v`, `type`, `id`, `tenant_id`, `channel`,
 * `state`, `attempts`, `dead_reason`, `last_error`, `next_attempt_at`, `occurred_at`); fields the
 * type does not name are left out. It does not validate: `parseStatusEvent` the result when the
 * input is not known to be good.
 */
export function serializeStatusEvent(message: StatusEventV1): string {
  return JSON.stringify({
    v: CONTRACT_VERSION,
    type: message.type,
    id: message.id,
    tenant_id: message.tenant_id,
    channel: message.channel,
    state: message.state,
    attempts: message.attempts,
    dead_reason: message.dead_reason,
    last_error: message.last_error,
    next_attempt_at: message.next_attempt_at,
    occurred_at: message.occurred_at,
  });
}
