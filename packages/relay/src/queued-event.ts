import { jsonbKeyOrder } from '@notify/outbox';

/**
 * The headers of the `notification.queued` event an enqueue's request row carries (migration
 * 0150): the request's headers without the request-only `attempt` and `due-at`, with
 * `message-type` notification.queued. The same object, keys in the same order, as the SQL
 * function `outbox_queued_event_headers` returns (and the `outbox_messages` view shows), which
 * the claim used to call for every row; here it costs no second jsonb for PostgreSQL to build
 * and send and pg to parse. jsonb orders keys by length, then bytewise; the request's headers
 * arrive in that order, so copying them keeps it, and only a missing `message-type` is placed by
 * sorting (queued-event.test.ts, and the relay's integration test against the SQL function).
 */
export function queuedEventHeaders(request: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  let typed = false;
  for (const k in request) {
    if (k === 'attempt' || k === 'due-at') continue;
    if (k === 'message-type') typed = true;
    out[k] = k === 'message-type' ? 'notification.queued' : request[k]!;
  }
  if (typed) return out;
  out['message-type'] = 'notification.queued';
  const sorted: Record<string, string> = {};
  for (const k of Object.keys(out).sort(jsonbKeyOrder)) sorted[k] = out[k]!;
  return sorted;
}
