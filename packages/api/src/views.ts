import type { Attempt } from '@notify/migrations';
import type { Notification } from '@notify/outbox';
import { ProblemError } from './problem.js';
import type { ActionView, AttemptView, NotificationView } from './schemas.js';
import type { NotificationAction } from './sql/notification-action-list.js';

const iso = (d: Date | string): string => new Date(d).toISOString();
const isoOrNull = (d: Date | string | null): string | null => (d === null ? null : iso(d));

/** A notification row as the API shows it (snake_case, ISO instants, `to` for the recipient). */
export function notificationView(n: Notification): NotificationView {
  return {
    id: n.id,
    channel: n.channel,
    to: n.recipient,
    state: n.state,
    dead_reason: n.dead_reason,
    attempts: n.attempts,
    max_attempts: n.max_attempts,
    last_error: n.last_error,
    created_at: iso(n.created_at),
    updated_at: iso(n.updated_at),
    next_attempt_at: isoOrNull(n.next_attempt_at),
    sent_at: isoOrNull(n.sent_at),
    expires_at: iso(n.expires_at),
    send_at: isoOrNull(n.send_at),
    priority: n.priority,
    ordering: n.ordering,
    metadata: n.metadata ?? {},
  };
}

/** An attempt row as the API shows it. */
export function attemptView(a: Attempt): AttemptView {
  return {
    attempt: a.attempt,
    started_at: iso(a.started_at),
    finished_at: iso(a.finished_at),
    outcome: a.outcome,
    error: a.error,
    provider_status: a.provider_status,
    provider: a.provider,
  };
}

/** A manual action row as the API shows it. */
export function actionView(a: NotificationAction): ActionView {
  return {
    action: a.action,
    from_state: a.from_state as ActionView['from_state'],
    to_state: a.to_state as ActionView['to_state'],
    previous_dead_reason: a.previous_dead_reason as ActionView['previous_dead_reason'],
    attempts: a.attempts,
    max_attempts: a.max_attempts,
    api_key_id: a.api_key_id,
    occurred_at: iso(a.occurred_at),
  };
}

/** The opaque cursor for "older than this id". */
export function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

/** The id inside a cursor (not yet validated). */
export function decodeCursor(cursor: string): string {
  return Buffer.from(cursor, 'base64url').toString('utf8');
}

/** The 400 `invalid_query` of a cursor this API did not return. */
export function cursorRefused(): ProblemError {
  return new ProblemError('invalid_query', 'the cursor is not one this API returned', {
    extensions: { errors: [{ path: 'cursor', message: 'pass next_cursor from the previous page unchanged' }] },
  });
}

/** The id inside a list's `cursor` query parameter, if any; `cursorRefused()` when it is not an id `isId` accepts. */
export function cursorId(cursor: string | undefined, isId: (id: string) => boolean): string | undefined {
  if (cursor === undefined) return undefined;
  const id = decodeCursor(cursor);
  if (!isId(id)) throw cursorRefused();
  return id;
}

/**
 * One page of a list read with `limit + 1` rows: the first `limit` as views, and the cursor of the
 * next page (null when the extra row was not there, so this is the last page).
 */
export function pageOf<R, V>(
  rows: readonly R[],
  limit: number,
  view: (row: R) => V,
  cursorOf: (row: R) => string,
): { data: V[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { data: page.map(view), next_cursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
