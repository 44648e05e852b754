import type { Logger } from './logger.js';

/** A listener for one event. Its return value is ignored, except that a returned promise that rejects is logged like a throw. */
export type Listener<Payload> = (payload: Payload) => unknown;

/**
 * A typed event emitter whose `emit` never throws (graphile-worker's `safeEmit`). Lifecycle
 * events of the relay and the dispatcher go through one of these: metrics and tests listen, and
 * a listener that throws, or returns a promise that rejects, is logged and ignored, so it can
 * never break the loop that emitted.
 */
export interface Emitter<Map extends object> {
  /** Adds a listener; returns a function that removes it. */
  readonly on: <E extends keyof Map>(event: E, listener: Listener<Map[E]>) => () => void;
  /** Calls every listener of `event` synchronously, in the order they were added. */
  readonly emit: <E extends keyof Map>(event: E, payload: Map[E]) => void;
}

/** Creates an emitter; listener failures are logged on `logger` as `<source> event listener failed`. */
export function createEmitter<Map extends object>(source: string, logger: Logger): Emitter<Map> {
  const listeners = new Map<keyof Map, Set<Listener<never>>>();
  const report = (event: keyof Map, err: unknown) =>
    logger.error(
      { event: String(event), err: err instanceof Error ? { name: err.name, message: err.message } : String(err) },
      `${source} event listener failed`,
    );
  return {
    on(event, listener) {
      let set = listeners.get(event);
      if (!set) listeners.set(event, (set = new Set()));
      set.add(listener);
      return () => {
        set.delete(listener);
      };
    },
    emit(event, payload) {
      const set = listeners.get(event);
      if (!set) return;
      for (const listener of [...set]) {
        try {
          const result = (listener as Listener<typeof payload>)(payload);
          if (result && typeof (result as Promise<void>).then === 'function') {
            (result as Promise<void>).then(undefined, (err: unknown) => report(event, err));
          }
        } catch (err) {
          report(event, err);
        }
      }
    },
  };
}
