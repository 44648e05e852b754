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
  const base = {
    attempt,
    providerStatus: 'providerStatus' in result ? (result.providerStatus ?? null) : null,
    provider: params.provider ?? null,
  };
  let plan: OutcomePlan;
  switch (result.kind) {
    case 'sent':
      plan = { ...base, attemptOutcome: 'sent', attemptError: null, to: 'sent', deadReason: null, lastError: null, ...noRetry };
      break;
    case 'permanent':
      plan = {
        ...base,
        attemptOutcome: 'permanent',
        attemptError: result.error,
        to: 'dead',
        deadReason: 'permanent',
        lastError: result.error,
        ...noRetry,
      };
      break;
    case 'endpoint_disabled':
      plan = {
        ...base,
        attemptOutcome: 'permanent',
        attemptError: result.error,
        to: 'dead',
        deadReason: 'endpoint_disabled',
        lastError: result.error,
        ...noRetry,
      };
      break;
    case 'suppressed':
      plan = {
        ...base,
        attemptOutcome: 'suppressed',
        attemptError: result.reason,
        to: 'dead',
        deadReason: 'suppressed',
        lastError: result.reason,
        ...noRetry,
      };
      break;
    case 'expired': {
      const error = `expired at ${new Date(notification.expires_at).toISOString()} before attempt ${attempt}`;
      plan = { ...base, attemptOutcome: 'expired', attemptError: error, to: 'dead', deadReason: 'expired', lastError: error, ...noRetry };
      break;
    }
    case 'transient': {
      const transient = { ...base, attemptOutcome: 'transient' as const, attemptError: result.error, lastError: result.error };
      if (attempt >= notification.max_attempts) {
        plan = { ...transient, to: 'dead', deadReason: 'exhausted', ...noRetry };
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
        plan = { ...transient, to: 'dead', deadReason: 'expired', ...noRetry };
        break;
      }
      plan = {
        ...transient,
        to: 'queued',
        deadReason: null,
        nextAttemptAt: due,
        retryTopic: tierFor(params.tiers, delayMs).topic,
        delayMs,
      };
      break;
    }
  }
  assertTransition(notification.state, plan.to);
  return plan;
}

const noRetry = { nextAttemptAt: null, retryTopic: null, delayMs: null } as const;
