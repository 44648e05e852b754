import { describe, expect, it } from 'vitest';
import { attemptSignal } from './http-post.js';

describe('attemptSignal', () => {
  it('aborts with a TimeoutError once its time is up', async () => {
    const attempt = attemptSignal(new AbortController().signal, 20);
    await new Promise<void>((resolve) => attempt.signal.addEventListener('abort', () => resolve(), { once: true }));
    expect((attempt.signal.reason as DOMException).name).toBe('TimeoutError');
    attempt.clear();
  });

  it('aborts with its parent, at once when the parent already is', () => {
    const parent = new AbortController();
    const attempt = attemptSignal(parent.signal, 60_000);
    expect(attempt.signal.aborted).toBe(false);
    parent.abort(new Error('shutdown'));
    expect(attempt.signal.aborted).toBe(true);
    expect((attempt.signal.reason as Error).message).toBe('shutdown');
    attempt.clear();
    expect(attemptSignal(parent.signal, 60_000).signal.aborted).toBe(true);
  });

  it('after clear() neither the timer nor the parent aborts it', async () => {
    const parent = new AbortController();
    const attempt = attemptSignal(parent.signal, 10);
    attempt.clear();
    await new Promise((r) => setTimeout(r, 50));
    parent.abort();
    expect(attempt.signal.aborted).toBe(false);
  });
});
