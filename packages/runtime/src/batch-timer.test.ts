import { describe, expect, it, vi } from 'vitest';
import { createBatchTimer } from './batch-timer.js';

describe('createBatchTimer', () => {
  it('with delay 0 fires once at the end of the event-loop turn, however often it is scheduled', async () => {
    let fired = 0;
    const timer = createBatchTimer(() => fired++, 0);
    timer.schedule();
    timer.schedule();
    expect(timer.scheduled).toBe(true);
    expect(fired).toBe(0);
    await new Promise((r) => setImmediate(r));
    expect(fired).toBe(1);
    expect(timer.scheduled).toBe(false);
  });

  it('with a delay fires after it, and not at all when cancelled', async () => {
    vi.useFakeTimers();
    try {
      let fired = 0;
      const timer = createBatchTimer(() => fired++, 5);
      timer.schedule();
      await vi.advanceTimersByTimeAsync(4);
      expect(fired).toBe(0);
      await vi.advanceTimersByTimeAsync(1);
      expect(fired).toBe(1);
      timer.schedule();
      timer.cancel();
      await vi.advanceTimersByTimeAsync(10);
      expect(fired).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });

  it('refuses a negative delay', () => {
    expect(() => createBatchTimer(() => {}, -1)).toThrow(RangeError);
  });
});
