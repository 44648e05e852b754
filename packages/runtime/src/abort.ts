// Many waiters on one long-lived signal (a dispatcher's shutdown signal, passed to every provider
// call and every rate-limit wait) share one 'abort' listener: an EventTarget listener per waiter
// costs an add and a remove per call, and past 10 of them Node prints MaxListenersExceededWarning.
const watchers = new WeakMap<AbortSignal, { readonly calls: Set<() => void>; readonly onAbort: () => void }>();

/**
 * Calls `fn` once when `signal` aborts (at once if it has). Returns the function that stops
 * watching. Every watcher of one signal shares one 'abort' listener, removed when the last
 * watcher stops.
 */
export function onAbort(signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn();
    return () => {};
  }
  let entry = watchers.get(signal);
  if (!entry) {
    const calls = new Set<() => void>();
    const listener = () => {
      watchers.delete(signal);
      for (const call of calls) call();
    };
    entry = { calls, onAbort: listener };
    watchers.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  const { calls, onAbort: listener } = entry;
  calls.add(fn);
  return () => {
    if (!calls.delete(fn) || calls.size > 0 || watchers.get(signal) !== entry) return;
    signal.removeEventListener('abort', listener);
    watchers.delete(signal);
  };
}
