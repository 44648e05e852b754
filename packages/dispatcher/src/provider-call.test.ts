import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { callProvider } from './provider-call.js';
import type { Delivery, Provider, SendResult } from '@notify/providers';

const delivery: Delivery = {
  id: 'ntf_1',
  tenantId: 't',
  channel: 'webhook',
  to: 'https://example.com/h',
  subject: null,
  body: 'b',
  data: null,
  metadata: {},
  attempt: 1,
  createdAt: new Date(0),
};
const provider = (send: Provider['send']): Provider => ({ channel: 'webhook', send });
/** Answers `onAbort` when the signal fires (an honest provider), or never (`null`). */
const waitForAbort = (onAbort: SendResult | null) =>
  provider(
    (_d, signal) =>
      new Promise((resolve) => {
        if (signal.aborted && onAbort) resolve(onAbort);
        signal.addEventListener('abort', () => onAbort && resolve(onAbort));
      }),
  );
const live = () => new AbortController().signal;
/** Runs `body`, then expects that no MaxListenersExceededWarning was emitted meanwhile. */
async function withoutMaxListenersWarning(body: () => Promise<void>): Promise<void> {
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);
  process.on('warning', onWarning);
  try {
    await body();
    await new Promise((r) => setImmediate(r));
    expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([]);
  } finally {
    process.off('warning', onWarning);
  }
}

describe('callProvider', () => {
  it('returns the provider answer', async () => {
    expect(
      await callProvider(
        provider(async () => ({ kind: 'sent', providerStatus: '202' })),
        delivery,
        { timeoutMs: 1000, shutdown: live() },
      ),
    ).toEqual({
      kind: 'result',
      result: { kind: 'sent', providerStatus: '202' },
    });
  });

  it('turns a throw into a transient failure with the message', async () => {
    const throwing = provider(async () => {
      throw new Error('ECONNRESET');
    });
    expect(await callProvider(throwing, delivery, { timeoutMs: 1000, shutdown: live() })).toEqual({
      kind: 'result',
      result: { kind: 'transient', error: 'ECONNRESET' },
    });
  });

  it('aborts at the timeout and takes the honest provider’s own answer', async () => {
    const r = await callProvider(waitForAbort({ kind: 'transient', error: 'timeout', providerStatus: 'timeout' }), delivery, {
      timeoutMs: 20,
      shutdown: live(),
    });
    expect(r).toEqual({ kind: 'result', result: { kind: 'transient', error: 'timeout', providerStatus: 'timeout' } });
  });

  it('gives up on a provider that ignores the signal after the grace', async () => {
    const r = await callProvider(waitForAbort(null), delivery, { timeoutMs: 20, shutdown: live(), graceMs: 20 });
    expect(r).toEqual({ kind: 'result', result: { kind: 'transient', error: 'timeout after 20 ms' } });
  });

  it('abandons the call on shutdown, unless it was sent', async () => {
    const shutdown = new AbortController();
    const pending = callProvider(waitForAbort({ kind: 'transient', error: 'aborted' }), delivery, {
      timeoutMs: 10_000,
      shutdown: shutdown.signal,
    });
    shutdown.abort();
    expect(await pending).toEqual({ kind: 'abandoned' });
    const again = new AbortController();
    const sent = callProvider(waitForAbort({ kind: 'sent' }), delivery, { timeoutMs: 10_000, shutdown: again.signal });
    again.abort();
    expect(await sent).toEqual({ kind: 'result', result: { kind: 'sent' } });
  });

  it('one shutdown aborts every attempt in flight, with one listener on the signal however many there are', async () => {
    await withoutMaxListenersWarning(async () => {
      const shutdown = new AbortController();
      // A call that finished before the shutdown is not called by it.
      expect(
        await callProvider(
          provider(async () => ({ kind: 'sent' })),
          delivery,
          { timeoutMs: 1000, shutdown: shutdown.signal },
        ),
      ).toEqual({
        kind: 'result',
        result: { kind: 'sent' },
      });
      expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(0);
      const calls = Array.from({ length: 40 }, () =>
        callProvider(waitForAbort({ kind: 'transient', error: 'aborted' }), delivery, { timeoutMs: 10_000, shutdown: shutdown.signal }),
      );
      expect(getEventListeners(shutdown.signal, 'abort')).toHaveLength(1);
      shutdown.abort();
      expect(await Promise.all(calls)).toEqual(calls.map(() => ({ kind: 'abandoned' })));
      // A call that starts after the shutdown is abandoned at once.
      expect(
        await callProvider(waitForAbort({ kind: 'transient', error: 'aborted' }), delivery, {
          timeoutMs: 10_000,
          shutdown: shutdown.signal,
        }),
      ).toEqual({ kind: 'abandoned' });
    });
  });

  it('attempts starting within 1 % of the timeout share one signal, aborted never before each one’s own timeout', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] });
    try {
      const shutdown = live();
      const signals: AbortSignal[] = [];
      const abortedAt = new Map<AbortSignal, number>();
      const recording = provider(
        (_d, signal) =>
          new Promise((resolve) => {
            signals.push(signal);
            signal.addEventListener('abort', () => {
              abortedAt.set(signal, performance.now());
              resolve({ kind: 'transient', error: 'timeout', providerStatus: 'timeout' });
            });
          }),
      );
      const t0 = performance.now();
      const first = callProvider(recording, delivery, { timeoutMs: 1000, shutdown });
      await vi.advanceTimersByTimeAsync(9); // inside the 10 ms window: joins the first attempt's deadline
      const second = callProvider(recording, delivery, { timeoutMs: 1000, shutdown });
      await vi.advanceTimersByTimeAsync(1); // the window has closed: a deadline of its own
      const third = callProvider(recording, delivery, { timeoutMs: 1000, shutdown });
      expect(signals).toHaveLength(3);
      expect(signals[1]).toBe(signals[0]);
      expect(signals[2]).not.toBe(signals[0]);
      expect(getEventListeners(shutdown, 'abort')).toHaveLength(1); // one watch for every deadline (onAbort)
      // The second attempt started at +9 ms: nothing is aborted before +1009 ms.
      await vi.advanceTimersByTimeAsync(999);
      expect(abortedAt.size).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(abortedAt.get(signals[0]!)! - t0).toBe(1010);
      const timedOut = { kind: 'result', result: { kind: 'transient', error: 'timeout', providerStatus: 'timeout' } };
      expect(await first).toEqual(timedOut);
      expect(await second).toEqual(timedOut);
      // The third started at +10 ms: at least 1000 ms later, at most 10 ms past that.
      await vi.advanceTimersByTimeAsync(9);
      expect(abortedAt.has(signals[2]!)).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(abortedAt.get(signals[2]!)! - t0).toBe(1020);
      expect(await third).toEqual(timedOut);
      // Every deadline was let go: no timer left, no watch on the shutdown signal.
      expect(vi.getTimerCount()).toBe(0);
      expect(getEventListeners(shutdown, 'abort')).toHaveLength(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it('a shared signal takes a listener per attempt without a MaxListenersExceededWarning', async () => {
    await withoutMaxListenersWarning(async () => {
      const shutdown = new AbortController();
      const signals = new Set<AbortSignal>();
      const aborting = waitForAbort({ kind: 'transient', error: 'aborted' });
      const listening = provider((d, signal) => (signals.add(signal), aborting.send(d, signal)));
      // 50 attempts in one tick: one signal with 50 listeners (httpPost adds one per request).
      const calls = Array.from({ length: 50 }, () => callProvider(listening, delivery, { timeoutMs: 10_000, shutdown: shutdown.signal }));
      expect(signals.size).toBe(1);
      expect(getEventListeners([...signals][0]!, 'abort')).toHaveLength(50);
      shutdown.abort();
      expect(await Promise.all(calls)).toEqual(calls.map(() => ({ kind: 'abandoned' })));
    });
  });

  it('admits a rate-limited provider before the attempt timeout starts', async () => {
    let admitted!: (ok: boolean) => void;
    let sendSignal: AbortSignal | undefined;
    const limited: Provider = {
      channel: 'webhook',
      admit: () => new Promise<boolean>((resolve) => (admitted = resolve)),
      send: async (_d, signal) => {
        sendSignal = signal;
        return { kind: 'sent' };
      },
    };
    vi.useFakeTimers();
    try {
      const call = callProvider(limited, delivery, { timeoutMs: 5, shutdown: live() });
      // Held in admit for far longer than the attempt timeout: the attempt must not time out meanwhile.
      await vi.advanceTimersByTimeAsync(1000);
      expect(sendSignal).toBeUndefined();
      admitted(true);
      expect(await call).toEqual({ kind: 'result', result: { kind: 'sent' } });
      expect(sendSignal?.aborted).toBe(false);
    } finally {
      vi.useRealTimers();
    }
  });

  it('abandons the attempt when admission is refused (shutdown while waiting for a token)', async () => {
    const send = async (): Promise<SendResult> => ({ kind: 'sent' });
    let sent = false;
    const refused: Provider = { channel: 'webhook', admit: async () => false, send: async () => ((sent = true), send()) };
    expect(await callProvider(refused, delivery, { timeoutMs: 1000, shutdown: live() })).toEqual({ kind: 'abandoned' });
    expect(sent).toBe(false);
  });
});
