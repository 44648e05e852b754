import { errorMessage, onAbort } from '@notify/runtime';
import type { Delivery, Provider, SendResult } from '@notify/providers';

/** How a provider call ended: its classified result, or cut short by shutdown. */
export type ProviderCallResult = { readonly kind: 'result'; readonly result: SendResult } | { readonly kind: 'abandoned' };

const ABORTED = Symbol('aborted');
const GAVE_UP = Symbol('gave-up');

/**
 * Calls `provider.send` with an AbortSignal that fires after `timeoutMs` (the per-attempt
 * timeout) or when `shutdown` aborts.
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
  const controller = new AbortController();
  // The timer and shutdown settle `aborted` themselves: no listener on the attempt's own signal.
  let settleAborted!: (value: typeof ABORTED) => void;
  const aborted = new Promise<typeof ABORTED>((resolve) => (settleAborted = resolve));
  const abort = (reason: Error) => {
    controller.abort(reason);
    settleAborted(ABORTED);
  };
  const timer = setTimeout(() => abort(new Error(`timeout after ${options.timeoutMs} ms`)), options.timeoutMs);
  const unwatch = onAbort(options.shutdown, () => abort(new Error('dispatcher shutting down')));
  let graceTimer: NodeJS.Timeout | undefined;
  try {
    const asTransient = (err: unknown): SendResult => ({ kind: 'transient', error: errorMessage(err) });
    let send: Promise<SendResult>;
    try {
      send = provider.send(delivery, controller.signal).catch(asTransient);
    } catch (err) {
      send = Promise.resolve(asTransient(err));
    }
    const first = await Promise.race([send, aborted]);
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
    clearTimeout(timer);
    clearTimeout(graceTimer);
    unwatch();
  }
}
