import type { Channel, DeadReason, NotificationState, StatusEventType } from './enums.js';

/**
 * `<prefix>.requests`, `<prefix>.requests.high` and `<prefix>.retry.<tier>`: a request to make attempt number `attempt`.
 * JSON schema: `schemas/delivery-request.v1.json`. No body, no recipient: the dispatcher loads
 * the notification by id.
 */
export interface DeliveryRequestV1 {
  readonly v: 1;
  readonly type: 'notification.deliver';
  /** The notification id, 1–64 characters. */
  readonly id: string;
  /** 1–200 characters. */
  readonly tenant_id: string;
  readonly channel: Channel;
  /** The attempt this message asks for (1 for the first). A message whose attempt is already done is skipped. */
  readonly attempt: number;
  /** ISO 8601 instant with an offset: not delivered before it. */
  readonly due_at: string;
}

/**
 * `<prefix>.events`: a state change, for other teams to react to without polling. No bodies, no
 * recipients. JSON schema: `schemas/status-event.v1.json`.
 */
export interface StatusEventV1 {
  readonly v: 1;
  readonly type: StatusEventType;
  /** The notification id, 1–64 characters. */
  readonly id: string;
  /** 1–200 characters. */
  readonly tenant_id: string;
  readonly channel: Channel;
  /** The state after the change. */
  readonly state: NotificationState;
  /** Attempts made so far (0 when queued). */
  readonly attempts: number;
  /** Set when `state` is `dead`. */
  readonly dead_reason: DeadReason | null;
  /** The last attempt's error, if any. */
  readonly last_error: string | null;
  /** ISO 8601 instant of the next attempt while queued, else null. */
  readonly next_attempt_at: string | null;
  /** ISO 8601 instant of the change. */
  readonly occurred_at: string;
}

/**
 * Why a message could not be used. `reason` is stable text meant for people (the dispatcher puts it
 * in the `dlq-reason` header); it may quote parts of the message.
 */
export type ParseFailure = { readonly ok: false; readonly reason: string };

/** The result of a `parse*` function: the message, or why there is none. */
export type ParseResult<T> = { readonly ok: true; readonly message: T } | ParseFailure;
