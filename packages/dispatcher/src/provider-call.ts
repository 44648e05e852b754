import { setMaxListeners } from 'node:events';
import { errorMessage, onAbort } from '@notify/runtime';
import type { Delivery, Provider, SendResult } from '@notify/providers';

/** How a provider call ended: its classified result, or cut short by shutdown. */
export type ProviderCallResult = { readonly kind: 'result'; readonly result: SendResult } | { readonly kind: 'abandoned' };

const ABORTED = Symbol('aborted');
const GAVE_UP = Symbol('gave-up');

/**
 * One abort signal shared by the attempts that start within a short window, with one timer and
 * one watch on the shutdown signal. An AbortController of its own per attempt cost ~5 µs on
 * Node 20 (creating its signal), plus a timer, a promise and a shutdown watch; under load dozens
 * of attempts start within a few milliseconds of each other and share all of it. The timer fires
 * `windowMs + timeoutMs` after the deadline opened, so an attempt that joined it at any moment of
 * the window is aborted at least `timeoutMs` after it started and at most `windowMs` later than a
 * timer of its own would have fired: never early, at most 1 % (and 20 ms) late.
 */
interface SharedDeadline {
  readonly controller: AbortController;
  /** Settles when the signal aborts (timeout or shutdown). */
  readonly aborted: Promise<typeof ABORTED>;
  /** Until this instant (`performance.now()`) attempts join it. */
  readonly closesAt: number;
  /** Attempts holding it: at 0 its timer and its shutdown watch go. */
  holders: number;
  readonly dispose: () => void;
}

// The deadline taking attempts now, per shutdown signal and timeout.
const openDeadlines = new WeakMap<AbortSignal, Map<number, SharedDeadline>>();

function openDeadline(shutdown: AbortSignal, timeoutMs: number, now: number): SharedDeadline {
  const windowMs = Math.min(timeoutMs / 100, 20);
  const controller = new AbortController();
  // Each attempt's provider may listen on the shared signal (httpPost does, until it settles).
  setMaxListeners(0, controller.signal);
  let settleAborted!: (value: typeof ABORTED) => void;
  const aborted = new Promise<typeof ABORTED>((resolve) => (settleAborted = resolve));
  const abort = (reason: Error) => {
    controller.abort(reason);
    settleAborted(ABORTED);
  };
  const timer = setTimeout(() => abort(new Error(`timeout after ${timeoutMs} ms`)), windowMs + timeoutMs);
  const unwatch = onAbort(shutdown, () => abort(new Error('dispatcher shutting down')));
  return {
    controller,
    aborted,
    closesAt: now + windowMs,
    holders: 0,
    dispose: () => {
      clearTimeout(timer);
      unwatch();
    },
  };
}

function acquireDeadline(shutdown: AbortSignal, timeoutMs: number): SharedDeadline {
  let byTimeout = openDeadlines.get(shutdown);
  if (byTimeout === undefined) openDeadlines.set(shutdown, (byTimeout = new Map<number, SharedDeadline>()));
  const now = performance.now();
  let deadline = byTimeout.get(timeoutMs);
  if (deadline === undefined || now >= deadline.closesAt || deadline.controller.signal.aborted) {
    deadline = openDeadline(shutdown, timeoutMs, now);
    byTimeout.set(timeoutMs, deadline);
  }
  deadline.holders++;
  return deadline;
}

function releaseDeadline(shutdown: AbortSignal, timeoutMs: number, deadline: SharedDeadline): void {
  if (--deadline.holders > 0) return;
  deadline.dispose();
  const byTimeout = openDeadlines.get(shutdown);
  if (byTimeout?.get(timeoutMs) === deadline) byTimeout.delete(timeoutMs);
}

/**
 * Calls `provider.send` with an AbortSignal that fires after `timeoutMs` (the per-attempt
 * timeout, up to 1 % later: see SharedDeadline) or when `shutdown` aborts.
 * - A provider with `admit` (rate limit) is admitted before the timeout starts.
 * - A throw is a transient failure with the error's message (the port's contract).
 * - On timeout the provider gets up to `graceMs` to return what it has (an honest provider
 *   returns a transient "timeout"; one that finished just then may still return "sent", which
 *   avoids a needless resend); after that the attempt is a transient "timeout after N ms".
 *   Waiting for it keeps the in-flight bound true for providers that honour the signal.
 * - On shutdown the attempt is abandoned (not recorded; the message comes again), unless the
 *   provider answers "sent" within the grace.
 */
export async function callProvider(
  provider: Provider,
  delivery: Delivery,
  options: { readonly timeoutMs: number; readonly shutdown: AbortSignal; readonly graceMs?: number },
): Promise<ProviderCallResult> {
  // A rate-limited provider is admitted first, outside the attempt's timeout: waiting for a token
  // is delay, not a failed attempt. Only shutdown interrupts the wait.
  if (provider.admit && !(await provider.admit(delivery, options.shutdown))) return { kind: 'abandoned' };
  const deadline = acquireDeadline(options.shutdown, options.timeoutMs);
  let graceTimer: NodeJS.Timeout | undefined;
  try {
    const asTransient = (err: unknown): SendResult => ({ kind: 'transient', error: errorMessage(err) });
    let send: Promise<SendResult>;
    try {
      send = provider.send(delivery, deadline.controller.signal).catch(asTransient);
    } catch (err) {
      send = Promise.resolve(asTransient(err));
    }
    const first = await Promise.race([send, deadline.aborted]);
    if (first !== ABORTED) return { kind: 'result', result: first };
    const grace = new Promise<typeof GAVE_UP>(
      (resolve) => (graceTimer = setTimeout(() => resolve(GAVE_UP), options.graceMs ?? Math.min(1000, options.timeoutMs))),
    );
    const late = await Promise.race([send, grace]);
    if (options.shutdown.aborted)
      return late !== GAVE_UP && late.kind === 'sent' ? { kind: 'result', result: late } : { kind: 'abandoned' };
    if (late === GAVE_UP) return { kind: 'result', result: { kind: 'transient', error: `timeout after ${options.timeoutMs} ms` } };
    return { kind: 'result', result: late };
  } finally {
    clearTimeout(graceTimer);
    releaseDeadline(options.shutdown, options.timeoutMs, deadline);
  }
}
