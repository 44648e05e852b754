import { type BackoffParams, backoffDelayMs } from '@notify/runtime';

/** Inputs of `nextAttemptAt`: the backoff rule's, with the instant the failure was recorded. */
export type NextAttemptParams = BackoffParams & { readonly now: Date };

/**
 * When the next attempt is due after attempt `attempt` failed transiently at `now`: `now` plus
 * the service's one backoff rule (`backoffDelayMs` in @notify/runtime), raised to a provider's
 * `notBefore` and capped by `maxMs`.
 */
export function nextAttemptAt(params: NextAttemptParams): Date {
  return new Date(params.now.getTime() + backoffDelayMs(params));
}
