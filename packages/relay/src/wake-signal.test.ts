import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { WakeSignal } from './wake-signal.js';

describe('WakeSignal', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('times out when nobody wakes it', async () => {
    const s = new WakeSignal();
    const p = s.wait(1_000);
    await vi.advanceTimersByTimeAsync(1_000);
    await expect(p).resolves.toBe(false);
  });

  it('wakes a waiting loop at once', async () => {
    const s = new WakeSignal();
    const p = s.wait(60_000);
    s.wake();
    await expect(p).resolves.toBe(true);
  });

  it('remembers a wake that arrived while the loop was busy, once', async () => {
    const s = new WakeSignal();
    s.wake();
    s.wake();
    await expect(s.wait(60_000)).resolves.toBe(true);
    const p = s.wait(10);
    await vi.advanceTimersByTimeAsync(10);
    await expect(p).resolves.toBe(false);
  });

  it('a backoff wait ignores wake() but keeps it for the next wait', async () => {
    const s = new WakeSignal();
    const backoff = s.wait(500, { wakeable: false });
    s.wake();
    await vi.advanceTimersByTimeAsync(499);
    let done = false;
    void backoff.then(() => (done = true));
    await Promise.resolve();
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(backoff).resolves.toBe(false);
    await expect(s.wait(60_000)).resolves.toBe(true);
  });

  it('interrupt ends any wait, backoff included, and every later one', async () => {
    const s = new WakeSignal();
    const p = s.wait(60_000, { wakeable: false });
    s.interrupt();
    await expect(p).resolves.toBe(true);
    await expect(s.wait(60_000)).resolves.toBe(true);
  });
});
