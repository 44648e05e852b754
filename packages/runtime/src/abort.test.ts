import { getEventListeners } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { onAbort } from './abort.js';

describe('onAbort', () => {
  it('shares one listener among the watchers of a signal, removed when the last one stops', () => {
    const c = new AbortController();
    const a = vi.fn();
    const b = vi.fn();
    const stopA = onAbort(c.signal, a);
    const stopB = onAbort(c.signal, b);
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(1);
    stopA();
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(1);
    stopB();
    expect(getEventListeners(c.signal, 'abort')).toHaveLength(0);
    c.abort();
    expect(a).not.toHaveBeenCalled();
    expect(b).not.toHaveBeenCalled();
  });

  it('calls every watcher once on abort, and at once on a signal that has aborted', () => {
    const c = new AbortController();
    const a = vi.fn();
    const b = vi.fn();
    const stopA = onAbort(c.signal, a);
    onAbort(c.signal, b);
    c.abort();
    stopA(); // after the abort: nothing to undo
    expect(a).toHaveBeenCalledTimes(1);
    expect(b).toHaveBeenCalledTimes(1);
    const late = vi.fn();
    onAbort(c.signal, late)();
    expect(late).toHaveBeenCalledTimes(1);
    // A new watcher after an abort on a fresh signal gets a fresh listener.
    const d = new AbortController();
    onAbort(d.signal, vi.fn());
    expect(getEventListeners(d.signal, 'abort')).toHaveLength(1);
  });
});
