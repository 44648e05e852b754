import { settlesWithin } from './timeout.js';

/** What `createPeriodicService` needs. */
export interface PeriodicServiceOptions<R> {
  /** For error messages. */
  readonly name: string;
  /** Time between the end of one run and the start of the next. */
  readonly intervalMs: number;
  /** Delay of the first run after `start()`. Default `intervalMs`. */
  readonly firstRunAfterMs?: number;
  /** One unit of work, done in bounded batches; its result is returned by `runOnce()`. */
  readonly run: () => Promise<R>;
  /**
   * A failed run is reported here. Must not throw. After failures in a row the next run waits
   * longer (`failureBackoffMs`), so a database that is down is not asked, and its failure not
   * logged, several times a second.
   */
  readonly onError: (error: unknown) => void;
  /** False: the next run after a failure comes after the interval, as after a success (a heartbeat that must not miss its lease). Default true. */
  readonly backOffOnFailure?: boolean;
}

/** The longest wait after failed runs: twice the interval per failure in a row, up to this (or the interval, if longer). */
const MAX_FAILURE_BACKOFF_MS = 5_000;

/** The wait before the next run after `failures` failed runs in a row (0: the interval). */
export function failureBackoffMs(intervalMs: number, failures: number): number {
  if (failures === 0) return intervalMs;
  return Math.min(intervalMs * 2 ** Math.min(failures, 30), Math.max(intervalMs, MAX_FAILURE_BACKOFF_MS));
}

/**
 * A periodic chore (River's maintenance services: `job_cleaner.go` and friends): `start` runs it
 * every `intervalMs`, `runOnce` runs it now (tests and callers that want a pass at once), `stop`
 * ends the timer and waits for a run in progress. Runs never overlap when driven by the timer;
 * a failed run is reported and retried, later after each failure in a row (`failureBackoffMs`).
 */
export interface PeriodicService<R> {
  readonly name: string;
  /** Schedules runs until `stop`. A second `start` while running does nothing, and so does a `start` after `stop`: a stopped service stays stopped. */
  start(): void;
  /** One run now, outside the schedule. */
  runOnce(): Promise<R>;
  /** Stops scheduling; waits up to `timeoutMs` (default: without limit) for a run in progress. True when none is left running. */
  stop(timeoutMs?: number): Promise<boolean>;
  /** True between `start` and `stop`. */
  readonly running: boolean;
}

/** Creates a periodic service; it does nothing until `start`. */
export function createPeriodicService<R>(options: PeriodicServiceOptions<R>): PeriodicService<R> {
  let timer: NodeJS.Timeout | undefined;
  let current: Promise<unknown> | null = null;
  let running = false;
  let stopped = false;

  const schedule = (ms: number) => {
    timer = setTimeout(tick, Math.max(0, ms));
  };
  let failures = 0;
  const tick = () => {
    timer = undefined;
    current = options
      .run()
      .then(
        () => {
          failures = 0;
        },
        (error: unknown) => {
          failures++;
          options.onError(error);
        },
      )
      .finally(() => {
        current = null;
        if (running) schedule(options.backOffOnFailure === false ? options.intervalMs : failureBackoffMs(options.intervalMs, failures));
      });
  };

  return {
    name: options.name,
    get running() {
      return running;
    },
    start() {
      if (running || stopped) return;
      running = true;
      schedule(options.firstRunAfterMs ?? options.intervalMs);
    },
    runOnce: () => options.run(),
    async stop(timeoutMs = Number.POSITIVE_INFINITY) {
      running = false;
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      return settlesWithin(current, Number.isFinite(timeoutMs) ? timeoutMs : 2 ** 31 - 1);
    },
  };
}
