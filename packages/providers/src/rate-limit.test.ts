import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import type { Delivery, Provider, SendResult } from './provider.js';
import { createTokenBucket, withRateLimit } from './rate-limit.js';
import { ManualTimers } from './testing/manual-timers.js';

const T0 = new Date('2026-05-01T12:00:00Z').getTime();

function delivery(i: number): Delivery {
  return {
    id: `ntf_${i}`,
    tenantId: 't',
    channel: 'webhook',
    to: 'https://example.com/',
    subject: null,
    body: 'b',
    data: null,
    metadata: {},
    attempt: 1,
    createdAt: new Date(T0),
  };
}

/** A provider that records the (manual) time of every call. */
function recordingProvider(clock: ManualClock): Provider & { calls: number[] } {
  const calls: number[] = [];
  return {
    channel: 'webhook',
    calls,
    async send(): Promise<SendResult> {
      calls.push(clock.now().getTime() - T0);
      return { kind: 'sent', providerStatus: '200' };
    },
  };
}

/** Most calls inside any window [t, t + windowMs). */
function maxInWindow(times: readonly number[], windowMs: number): number {
  let best = 0;
  let lo = 0;
  for (let hi = 0; hi < times.length; hi++) {
    while (times[hi]! - times[lo]! >= windowMs) lo++;
    best = Math.max(best, hi - lo + 1);
  }
  return best;
}

describe('withRateLimit (token bucket, manual clock)', () => {
  it('a burst of 200 against 50/s (burst 50): no errors, never more than 50 + 50 in any second, the exact schedule', async () => {
    const clock = new ManualClock(T0);
    const timers = new ManualTimers(clock);
    const inner = recordingProvider(clock);
    const limited = withRateLimit({ perSecond: 50, burst: 50 }, { clock, timers })(inner);
    // One signal per attempt, as the dispatcher gives.
    const all = Promise.all(Array.from({ length: 200 }, (_, i) => limited.send(delivery(i), new AbortController().signal)));
    await timers.runUntilIdle(() => inner.calls.length === 200);
    const results = await all;

    expect(results.every((r) => r.kind === 'sent')).toBe(true);
    // The first 50 go at once (the burst), then one every 20 ms: call k at (k - 49) × 20 ms.
    const expected = Array.from({ length: 200 }, (_, k) => (k < 50 ? 0 : (k - 49) * 20));
    expect(inner.calls).toEqual(expected);
    expect(maxInWindow(inner.calls, 1000)).toBeLessThanOrEqual(50 + 50);
    // Steady state: after the burst, any second holds at most 50.
    expect(maxInWindow(inner.calls.slice(50), 1000)).toBeLessThanOrEqual(50);
    expect(inner.calls.at(-1)).toBe(3000);
  });

  it('a small burst allowance spreads the same load evenly', async () => {
    const clock = new ManualClock(T0);
    const timers = new ManualTimers(clock);
    const inner = recordingProvider(clock);
    const limited = withRateLimit({ perSecond: 50, burst: 1 }, { clock, timers })(inner);
    // One signal per attempt, as the dispatcher gives.
    const all = Promise.all(Array.from({ length: 200 }, (_, i) => limited.send(delivery(i), new AbortController().signal)));
    await timers.runUntilIdle(() => inner.calls.length === 200);
    await all;
    expect(inner.calls).toEqual(Array.from({ length: 200 }, (_, k) => k * 20));
    expect(maxInWindow(inner.calls, 1000)).toBe(50);
  });

  it('refills while idle, up to the burst and no more', async () => {
    const clock = new ManualClock(T0);
    const timers = new ManualTimers(clock);
    const bucket = createTokenBucket({ perSecond: 10, burst: 3 }, { clock, timers });
    const signal = new AbortController().signal;
    for (let i = 0; i < 3; i++) expect(await bucket.take(signal)).toBe(true);
    clock.advance(60_000);
    // Three immediately (bucket full again), the fourth has to wait 100 ms.
    for (let i = 0; i < 3; i++) expect(await bucket.take(signal)).toBe(true);
    let fourth = false;
    const pending = bucket.take(signal).then((ok) => (fourth = ok));
    await new Promise((r) => setImmediate(r));
    expect(fourth).toBe(false);
    expect(bucket.waiting).toBe(1);
    timers.runNext();
    await pending;
    expect(fourth).toBe(true);
    expect(clock.now().getTime() - T0).toBe(60_100);
  });

  it('an abort while waiting ends that attempt as transient "timeout" and uses no token', async () => {
    const clock = new ManualClock(T0);
    const timers = new ManualTimers(clock);
    const inner = recordingProvider(clock);
    const limited = withRateLimit({ perSecond: 1, burst: 1 }, { clock, timers })(inner);
    const free = new AbortController().signal;
    expect((await limited.send(delivery(0), free)).kind).toBe('sent');
    const controller = new AbortController();
    const waiting = limited.send(delivery(1), controller.signal);
    const behind = limited.send(delivery(2), free);
    await new Promise((r) => setImmediate(r));
    controller.abort();
    expect(await waiting).toEqual({ kind: 'transient', error: 'timeout', providerStatus: 'rate_limited' });
    // The aborted waiter gave its place up: the next one gets the token 1 s after the first call.
    await timers.runUntilIdle(() => inner.calls.length === 2);
    expect((await behind).kind).toBe('sent');
    expect(inner.calls).toEqual([0, 1000]);
  });

  it('admit() reserves the token ahead of send(), so send does not wait again', async () => {
    const clock = new ManualClock(T0);
    const timers = new ManualTimers(clock);
    const inner = recordingProvider(clock);
    const limited = withRateLimit({ perSecond: 1, burst: 1 }, { clock, timers })(inner);
    const signal = new AbortController().signal;
    const d0 = delivery(0);
    const d1 = delivery(1);
    expect(await limited.admit!(d0, signal)).toBe(true);
    const admitted = limited.admit!(d1, signal);
    await timers.runUntilIdle(() => timers.pending === 0);
    expect(await admitted).toBe(true);
    expect(clock.now().getTime() - T0).toBe(1000);
    // Both were admitted: sending them now takes no more time and no more tokens.
    await limited.send(d0, signal);
    await limited.send(d1, signal);
    expect(inner.calls).toEqual([1000, 1000]);
    expect(timers.pending).toBe(0);
  });

  it('waiters sharing one signal (a shutdown signal) add one abort listener, removed when served; an abort releases them all', async () => {
    const clock = new ManualClock(T0);
    const timers = new ManualTimers(clock);
    const bucket = createTokenBucket({ perSecond: 100, burst: 1 }, { clock, timers });
    const shared = new AbortController();
    const served = Promise.all(Array.from({ length: 50 }, () => bucket.take(shared.signal)));
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(1);
    await timers.runUntilIdle(() => bucket.waiting === 0);
    expect(await served).toEqual(Array(50).fill(true));
    expect(getEventListeners(shared.signal, 'abort')).toHaveLength(0);

    const stopping = new AbortController();
    const pending = Promise.all(Array.from({ length: 20 }, () => bucket.take(stopping.signal)));
    stopping.abort();
    expect(await pending).toEqual(Array(20).fill(false));
    expect(bucket.waiting).toBe(0);
    expect(timers.pending).toBe(0);
  });

  it('rejects nonsense limits', () => {
    const clock = new ManualClock(T0);
    expect(() => createTokenBucket({ perSecond: 0, burst: 1 }, { clock })).toThrow(/perSecond/);
    expect(() => createTokenBucket({ perSecond: 1, burst: 0 }, { clock })).toThrow(/burst/);
  });
});
