// The contract's own copies of the service's enums, frozen for v1. The service may grow its sets;
// a value reaches the wire only when a contract version names it here, so these arrays are what
// consumers can switch over exhaustively.

/** The delivery channels of v1. */
export const CHANNELS = Object.freeze(['email', 'sms', 'webhook'] as const);
/** One of `CHANNELS`. */
export type Channel = (typeof CHANNELS)[number];

/** A notification's states: `queued → sent | dead | cancelled`, and `dead → queued` on a manual retry. */
export const NOTIFICATION_STATES = Object.freeze(['queued', 'sent', 'dead', 'cancelled'] as const);
/** One of `NOTIFICATION_STATES`. */
export type NotificationState = (typeof NOTIFICATION_STATES)[number];

/** Why a notification is dead: a permanent provider failure, attempts exhausted, expired, suppressed (opt-out), or its delivery request refused by Kafka for good (publish_failed). */
export const DEAD_REASONS = Object.freeze(['permanent', 'exhausted', 'expired', 'suppressed', 'publish_failed'] as const);
/** One of `DEAD_REASONS`. */
export type DeadReason = (typeof DEAD_REASONS)[number];

/** Status event types, one per kind of transition (the `type` of a `StatusEventV1`). */
export const STATUS_EVENT_TYPES = Object.freeze([
  'notification.queued',
  'notification.retry_scheduled',
  'notification.sent',
  'notification.dead',
  'notification.cancelled',
  'notification.requeued',
] as const);
/** One of `STATUS_EVENT_TYPES`. */
export type StatusEventType = (typeof STATUS_EVENT_TYPES)[number];
