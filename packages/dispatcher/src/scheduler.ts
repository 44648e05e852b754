/** What a task tells the scheduler: done, or "run me again in `retryInMs`" (its key stays blocked meanwhile). */
export type TaskResult = void | { readonly retryInMs: number };

/**
 * A unit of work for one key. It should not throw; if it does, `onError` hears of it and the task
 * counts as done. It may call `release()` before it ends: the key's next task may then start, and
 * this task gives its permit back, while it finishes (it still counts against `maxRunning` until
 * it ends); `release()` returns whether a next task of the key was waiting (true only on the call
 * that released). A task that released its key and then asks for a retry runs again when the key
 * is next free (its place in the key's order is gone).
 */
export type Task = (release: () => boolean) => Promise<TaskResult>;

/** Options of `createKeyedScheduler`. */
export interface KeyedSchedulerOptions {
  /** Permits: tasks started and neither released nor ended, at most. */
  readonly maxInFlight: number;
  /**
   * Tasks started and not ended (holding a permit, or released and finishing), at most; no task
   * starts while this many run. At least `maxInFlight`. Default `maxInFlight`: a task that
   * released then keeps its place until it ends, as if it kept its permit.
   */
  readonly maxRunning?: number;
  /** Hears about tasks that threw. */
  readonly onError?: (err: unknown) => void;
}

/**
 * Runs tasks with two rules: tasks of the same key start one at a time, in the order pushed (each
 * after the previous one ended or released the key); tasks of different keys run concurrently, at
 * most `maxInFlight` holding a permit at once and `maxRunning` started and not ended, overall
 * (not per partition).
 * Keys take turns (round robin), so one busy key cannot starve the others.
 */
export interface KeyedScheduler {
  /** Queues a task behind the key's earlier tasks. Ignored after `close()`. */
  push(key: string, task: Task): void;
  /** Tasks started and not ended: holding a permit, or released and finishing (at most `maxRunning`). */
  readonly running: number;
  /** Tasks holding a permit: started and neither released nor ended (at most `maxInFlight`). */
  readonly holdingPermits: number;
  /** Tasks pushed and not finished: running, waiting behind their key or for a permit, or waiting to retry. */
  readonly size: number;
  /** Resolves once `size` is below `limit`. */
  whenSizeBelow(limit: number): Promise<void>;
  /** Resolves once no task is running, finishing ones included (after `close()`: once the running ones ended). */
  whenIdle(): Promise<void>;
  /** Resolves once every pushed task finished. */
  whenDrained(): Promise<void>;
  /** Starts nothing more: drops waiting tasks and pending retries (returns how many); running tasks finish. */
  close(): number;
}

interface KeyQueue {
  readonly tasks: Task[];
  /** A task of this key is running or waiting to retry. */
  busy: boolean;
}

/** Creates a `KeyedScheduler`. */
export function createKeyedScheduler(options: KeyedSchedulerOptions): KeyedScheduler {
  const { maxInFlight } = options;
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new RangeError(`maxInFlight must be a whole number ≥ 1, got ${maxInFlight}`);
  const maxRunning = options.maxRunning ?? maxInFlight;
  if (!Number.isInteger(maxRunning) || maxRunning < maxInFlight) {
    throw new RangeError(`maxRunning must be a whole number ≥ maxInFlight (${maxInFlight}), got ${maxRunning}`);
  }
  const queues = new Map<string, KeyQueue>();
  /** Keys whose next task may start, in turn order. A key is here at most once. */
  const ready: string[] = [];
  const retryTimers = new Set<NodeJS.Timeout>();
  let running = 0;
  let holding = 0;
  let size = 0;
  let closed = false;
  let waiters: { check: () => boolean; resolve: () => void }[] = [];

  const notify = () => {
    if (waiters.length === 0) return;
    const still: typeof waiters = [];
    for (const w of waiters) (w.check() ? w.resolve : () => still.push(w))();
    waiters = still;
  };
  const waitUntil = (check: () => boolean) =>
    check() ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ check, resolve }));

  const finishOne = (key: string, queue: KeyQueue) => {
    size--;
    queue.busy = false;
    if (queue.tasks.length > 0) ready.push(key);
    else queues.delete(key);
  };

  /** Queues `task` first for its key again (a retry after the key was released), as the key's queue is now. */
  const requeueFirst = (key: string, task: Task) => {
    let queue = queues.get(key);
    if (!queue) queues.set(key, (queue = { tasks: [], busy: false }));
    queue.tasks.unshift(task);
    if (!queue.busy && queue.tasks.length === 1) ready.push(key);
  };

  const start = (key: string, queue: KeyQueue, task: Task) => {
    running++;
    holding++;
    queue.busy = true;
    let result: TaskResult = undefined;
    let released = false;
    const release = () => {
      if (released) return false;
      released = true;
      holding--;
      queue.busy = false;
      const next = queue.tasks.length > 0;
      if (next) ready.push(key);
      pump();
      return next;
    };
    void (async () => {
      try {
        result = await task(release);
      } catch (err) {
        options.onError?.(err);
      }
      running--;
      if (!released) holding--;
      if (result && !closed) {
        // Not released: keep the key blocked (order), give the permit back (others may run meanwhile).
        const timer = setTimeout(
          () => {
            retryTimers.delete(timer);
            if (released) requeueFirst(key, task);
            else {
              queue.tasks.unshift(task);
              queue.busy = false;
              ready.push(key);
            }
            pump();
          },
          Math.max(0, result.retryInMs),
        );
        retryTimers.add(timer);
      } else if (result) {
        size--; // closed while it wanted a retry: dropped
      } else if (released) {
        size--;
        if (!queue.busy && queue.tasks.length === 0 && queues.get(key) === queue) queues.delete(key);
      } else {
        finishOne(key, queue);
      }
      pump();
    })();
  };

  const pump = () => {
    while (!closed && holding < maxInFlight && running < maxRunning && ready.length > 0) {
      const key = ready.shift() as string;
      const queue = queues.get(key);
      if (!queue || queue.busy) continue;
      const task = queue.tasks.shift();
      if (!task) {
        queues.delete(key);
        continue;
      }
      start(key, queue, task);
    }
    notify();
  };

  return {
    push(key, task) {
      if (closed) return;
      size++;
      let queue = queues.get(key);
      if (!queue) {
        queue = { tasks: [], busy: false };
        queues.set(key, queue);
      }
      queue.tasks.push(task);
      if (!queue.busy && queue.tasks.length === 1) ready.push(key);
      pump();
    },
    get running() {
      return running;
    },
    get holdingPermits() {
      return holding;
    },
    get size() {
      return size;
    },
    whenSizeBelow(limit) {
      return waitUntil(() => size < limit);
    },
    whenIdle() {
      return waitUntil(() => running === 0);
    },
    whenDrained() {
      return waitUntil(() => size === 0);
    },
    close() {
      if (closed) return 0;
      closed = true;
      let dropped = retryTimers.size;
      for (const t of retryTimers) clearTimeout(t);
      retryTimers.clear();
      for (const queue of queues.values()) {
        dropped += queue.tasks.length;
        queue.tasks.length = 0;
      }
      queues.clear();
      ready.length = 0;
      size = running;
      notify();
      return dropped;
    },
  };
}
