/**
 * The timer of a micro-batch: the first item of a batch schedules `fire`, later items join the
 * batch until it fires. `delayMs` 0 fires at the end of the current event-loop turn
 * (`setImmediate`), so items created together in one turn go together at no added latency.
 */
export interface BatchTimer {
  /** Schedules `fire` unless it is already scheduled. */
  schedule(): void;
  /** Cancels a scheduled `fire` (call it when the batch goes out early, e.g. because it is full). */
  cancel(): void;
  /** True while `fire` is scheduled. */
  readonly scheduled: boolean;
}

/** Creates the timer; nothing is scheduled until `schedule()`. */
export function createBatchTimer(fire: () => void, delayMs: number): BatchTimer {
  if (!(delayMs >= 0)) throw new RangeError(`batch delay must be ≥ 0 ms, got ${delayMs}`);
  let cancelScheduled: (() => void) | undefined;
  const run = () => {
    cancelScheduled = undefined;
    fire();
  };
  return {
    schedule() {
      if (cancelScheduled) return;
      if (delayMs === 0) {
        const handle = setImmediate(run);
        cancelScheduled = () => clearImmediate(handle);
      } else {
        const handle = setTimeout(run, delayMs);
        cancelScheduled = () => clearTimeout(handle);
      }
    },
    cancel() {
      cancelScheduled?.();
      cancelScheduled = undefined;
    },
    get scheduled() {
      return cancelScheduled !== undefined;
    },
  };
}
