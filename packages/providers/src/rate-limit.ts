import { type Clock, onAbort } from '@notify/runtime';
import type { Delivery, Provider, SendResult } from './provider.js';

/** A provider's send budget: `perSecond` on average, at most `burst` at once. */
export interface RateLimit {
  readonly perSecond: number;
  readonly burst: number;
}

/** The timer port: how the bucket waits. `systemTimers` in production, `ManualTimers` (testing) with a `ManualClock`. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Node's timers. */
export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Dependencies of a token bucket. */
export interface RateLimitDeps {
  readonly clock: Clock;
  readonly timers?: Timers;
}

/** A token bucket: `take` resolves when a token is granted, in arrival order. */
export interface TokenBucket {
  /** Waits for a token. Resolves true when granted, false when `signal` aborted first (no token used). */
  take(signal: AbortSignal): Promise<boolean>;
  /** Callers waiting now. */
  readonly waiting: number;
}

interface Waiter {
  readonly resolve: (granted: boolean) => void;
  /** Stops watching the waiter's signal. */
  unwatch: () => void;
}

/**
 * A token bucket in its GCRA form (one number of state: the theoretical arrival time `tat`):
 * a request at `now` conforms when `now >= tat - (burst - 1) * interval`, and then moves
 * `tat` to `max(tat, now) + interval`. This is exactly a bucket of `burst` tokens refilled
 * at `perSecond`, without fractional token counts. Waiters are served first come, first
 * served by one timer; an aborted waiter leaves the queue without using a token.
 */
export function createTokenBucket(limit: RateLimit, deps: RateLimitDeps): TokenBucket {
  if (!(limit.perSecond > 0) || !Number.isFinite(limit.perSecond))
    throw new Error(`rate limit: perSecond must be a positive number, got ${limit.perSecond}`);
  if (!Number.isInteger(limit.burst) || limit.burst < 1)
    throw new Error(`rate limit: burst must be a whole number ≥ 1, got ${limit.burst}`);
  const timers = deps.timers ?? systemTimers;
  const interval = 1000 / limit.perSecond;
  const tolerance = interval * (limit.burst - 1);
  let tat = Number.NEGATIVE_INFINITY;
  const queue: Waiter[] = [];
  let timer: unknown;
  // A waiter's signal is watched with onAbort: one 'abort' listener per signal, however many
  // waiters share it (a dispatcher may pass one shutdown signal to every admit).
  function leave(waiter: Waiter): void {
    const i = queue.indexOf(waiter);
    if (i >= 0) queue.splice(i, 1);
    waiter.resolve(false);
    if (queue.length === 0 && timer !== undefined) {
      timers.clearTimeout(timer);
      timer = undefined;
    }
  }

  const conforms = (now: number) => now >= tat - tolerance;
  const grant = (now: number) => {
    tat = Math.max(tat, now) + interval;
  };

  function pump(): void {
    timer = undefined;
    const now = deps.clock.now().getTime();
    while (queue.length > 0 && conforms(now)) {
      grant(now);
      const waiter = queue.shift()!;
      waiter.unwatch();
      waiter.resolve(true);
    }
    if (queue.length > 0) timer = timers.setTimeout(pump, Math.max(1, Math.ceil(tat - tolerance - now)));
  }

  return {
    take(signal) {
      if (signal.aborted) return Promise.resolve(false);
      const now = deps.clock.now().getTime();
      if (queue.length === 0 && conforms(now)) {
        grant(now);
        return Promise.resolve(true);
      }
      return new Promise<boolean>((resolve) => {
        const waiter: Waiter = { resolve, unwatch: () => {} };
        waiter.unwatch = onAbort(signal, () => leave(waiter));
        queue.push(waiter);
        if (timer === undefined) pump();
      });
    },
    get waiting() {
      return queue.length;
    },
  };
}

/**
 * Rate-limit middleware for a provider: `(provider) => provider`. Excess becomes delay, not
 * errors: `send` waits for a token (first come, first served) and then calls the provider.
 * Only an abort while waiting ends the attempt, as the transient "timeout" every provider
 * returns on abort (`providerStatus: "rate_limited"` tells the two apart).
 *
 * The returned provider has `admit`: a dispatcher that calls `admit(delivery, shutdownSignal)`
 * before starting the per-attempt timeout keeps the wait out of the attempt's time budget.
 */
export function withRateLimit(limit: RateLimit, deps: RateLimitDeps): (provider: Provider) => Provider {
  return (provider) => {
    const bucket = createTokenBucket(limit, deps);
    const admitted = new WeakSet<Delivery>();
    const limited: Provider = {
      channel: provider.channel,
      ...(provider.origin !== undefined ? { origin: provider.origin } : {}),
      async admit(delivery, signal) {
        if (!admitted.has(delivery)) {
          if (!(await bucket.take(signal))) return false;
          admitted.add(delivery);
        }
        return provider.admit ? provider.admit(delivery, signal) : true;
      },
      async send(delivery, signal): Promise<SendResult> {
        if (admitted.has(delivery)) admitted.delete(delivery);
        else if (!(await bucket.take(signal))) return { kind: 'transient', error: 'timeout', providerStatus: 'rate_limited' };
        return provider.send(delivery, signal);
      },
    };
    if (provider.close) {
      const close = provider.close.bind(provider);
      return { ...limited, close };
    }
    return limited;
  };
}
