import { InvalidTransitionError } from '../errors.js';

/**
 * The notification state machine. The same sets appear as CHECK constraints in
 * migrations/sql/0001_initial.sql and as a diagram in docs/state-machine.md.
 *
 * queued → sent | dead | cancelled; dead → queued (manual retry). sent and cancelled are final.
 */
export const NOTIFICATION_STATES = ['queued', 'sent', 'dead', 'cancelled'] as const;
export type NotificationState = (typeof NOTIFICATION_STATES)[number];

/** Allowed transitions. `queued → queued` is a scheduled retry. */
export const TRANSITIONS: { readonly [S in NotificationState]: readonly NotificationState[] } = {
  queued: ['queued', 'sent', 'dead', 'cancelled'],
  sent: [],
  dead: ['queued'],
  cancelled: [],
};

/** States in which no more delivery attempts will happen on their own. */
export const TERMINAL_STATES: readonly NotificationState[] = ['sent', 'dead', 'cancelled'];

/**
 * Why a notification is dead. `publish_failed`: Kafka refused its delivery request for good (too
 * large, invalid record). `endpoint_disabled`: its endpoint (webhook origin, SMTP / SMS provider)
 * is disabled (docs/endpoints.md); status events v1 carry it as `permanent`.
 */
export const DEAD_REASONS = ['permanent', 'exhausted', 'expired', 'suppressed', 'publish_failed', 'endpoint_disabled'] as const;
export type DeadReason = (typeof DEAD_REASONS)[number];

/** The outcome of one attempt, as stored in the attempt history. */
export const ATTEMPT_OUTCOMES = ['sent', 'transient', 'permanent', 'expired', 'suppressed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** The delivery channels. */
export const CHANNELS = ['email', 'sms', 'webhook'] as const;
export type Channel = (typeof CHANNELS)[number];

/** True when the state machine allows `from → to`. */
export function canTransition(from: NotificationState, to: NotificationState): boolean {
  return TRANSITIONS[from].includes(to);
}

/** Throws `InvalidTransitionError` unless the state machine allows `from → to`. */
export function assertTransition(from: NotificationState, to: NotificationState): void {
  if (!canTransition(from, to)) throw new InvalidTransitionError(from, to);
}

/** True for sent, dead and cancelled. */
export function isTerminal(state: NotificationState): boolean {
  return TERMINAL_STATES.includes(state);
}
