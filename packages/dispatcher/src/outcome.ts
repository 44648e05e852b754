import { assertTransition, type AttemptOutcome, type DeadReason, type Notification } from '@notify/outbox';
import type { RetryConfig } from './config.js';
import type { ProviderRole, SendResult } from '@notify/providers';
import { backoffDelayMs } from '@notify/runtime';
import { tierFor, type DelayTier } from './retry/delay-topics.js';

/**
 * What happened on one attempt, as the dispatcher sees it: a provider's answer, or one of the
 * reasons it did not call the provider.
 */
export type AttemptResult =
  | SendResult
  /** The notification's expiry passed before the attempt. */
  | { readonly kind: 'expired' }
  /** The recipient opted out (checked at send time). */
  | { readonly kind: 'suppressed'; readonly reason: string }
  /** The endpoint is disabled (docs/endpoints.md): no provider was called. */
  | { readonly kind: 'endpoint_disabled'; readonly error: string };

/** The state change one attempt causes: the attempt row, the notification's new state, and the retry to schedule. */
export interface OutcomePlan {
  readonly attempt: number;
  readonly attemptOutcome: AttemptOutcome;
  /** The attempt row's error (null when sent). */
  readonly attemptError: string | null;
  readonly providerStatus: string | null;
  /** Which provider answered (primary or the channel's fallback); null when none was called. */
  readonly provider: ProviderRole | null;
  readonly to: 'sent' | 'queued' | 'dead';
  readonly deadReason: DeadReason | null;
  /** The notification's `last_error`: cleared on success. */
  readonly lastError: string | null;
  /** Set when `to` is queued: when the next attempt is due. */
  readonly nextAttemptAt: Date | null;
  /** Set when `to` is queued: the delay topic suffix (`retry.<tier>`) the retry waits on. */
  readonly retryTopic: string | null;
  readonly delayMs: number | null;
}

/** The inputs of `planOutcome`. */
export interface PlanOutcomeParams {
  readonly notification: Pick<Notification, 'state' | 'max_attempts' | 'expires_at'>;
  /** The attempt that was made (1 for the first). */
  readonly attempt: number;
  readonly result: AttemptResult;
  /** Which provider gave `result`; absent when none was called. */
  readonly provider?: ProviderRole;
  readonly now: Date;
  readonly retry: Pick<RetryConfig, 'baseDelayMs' | 'maxDelayMs' | 'jitter'>;
  readonly tiers: readonly DelayTier[];
  readonly random: () => number;
}

/**
 * The article's classification, as a pure function (the state machine of one attempt):
 * - sent → `sent`, error cleared;
 * - permanent → `dead` (permanent) at once; suppressed → `dead` (suppressed); expired → `dead` (expired);
 * - transient → `queued` with `next_attempt_at = now + backoff(attempt)` (a provider's "not before"
 *   raises it, capped by the max delay), unless this was the last allowed attempt (`dead`,
 *   exhausted, with the last error) or the next attempt would not come before the expiry
 *   (`dead`, expired, with the last error: an attempt after the expiry would be refused anyway).
 */
export function planOutcome(params: PlanOutcomeParams): OutcomePlan {
  const { notification, attempt, result, now } = params;
  const providerStatus = 'providerStatus' in result ? (result.providerStatus ?? null) : null;
  const provider = params.provider ?? null;
  // Every plan is built by `plan` below, all fields in one order: one object shape, no spreads
  // (a spread after literal fields is copied by the runtime, which a drain profile showed as the
  // hottest line of the dispatcher's own code).
  const ended = (attemptOutcome: AttemptOutcome, error: string | null, to: 'sent' | 'dead', deadReason: DeadReason | null) =>
    plan(attempt, attemptOutcome, error, providerStatus, provider, to, deadReason, error, null, null, null);
  let planned: OutcomePlan;
  switch (result.kind) {
    case 'sent':
      planned = ended('sent', null, 'sent', null);
      break;
    case 'permanent':
      planned = ended('permanent', result.error, 'dead', 'permanent');
      break;
    case 'endpoint_disabled':
      planned = ended('permanent', result.error, 'dead', 'endpoint_disabled');
      break;
    case 'suppressed':
      planned = ended('suppressed', result.reason, 'dead', 'suppressed');
      break;
    case 'expired':
      // No instant in the text (the row has expires_at): the console groups dead notifications by
      // their error, and one instant per notification made a group of each.
      planned = ended('expired', `expired before attempt ${attempt} (expires_at passed)`, 'dead', 'expired');
      break;
    case 'transient': {
      if (attempt >= notification.max_attempts) {
        planned = ended('transient', result.error, 'dead', 'exhausted');
        break;
      }
      const delayMs = backoffDelayMs({
        now,
        attempt,
        baseMs: params.retry.baseDelayMs,
        maxMs: params.retry.maxDelayMs,
        jitter: params.retry.jitter,
        random: params.random,
        notBefore: result.notBefore,
      });
      const due = new Date(now.getTime() + delayMs);
      if (due.getTime() >= new Date(notification.expires_at).getTime()) {
        planned = ended('transient', result.error, 'dead', 'expired');
        break;
      }
      const retryTopic = tierFor(params.tiers, delayMs).topic;
      planned = plan(attempt, 'transient', result.error, providerStatus, provider, 'queued', null, result.error, due, retryTopic, delayMs);
      break;
    }
  }
  assertTransition(notification.state, planned.to);
  return planned;
}

/** An `OutcomePlan`, its fields always in this order. */
function plan(
  attempt: number,
  attemptOutcome: AttemptOutcome,
  attemptError: string | null,
  providerStatus: string | null,
  provider: ProviderRole | null,
  to: OutcomePlan['to'],
  deadReason: DeadReason | null,
  lastError: string | null,
  nextAttemptAt: Date | null,
  retryTopic: string | null,
  delayMs: number | null,
): OutcomePlan {
  return { attempt, attemptOutcome, attemptError, providerStatus, provider, to, deadReason, lastError, nextAttemptAt, retryTopic, delayMs };
}
