import { performance } from 'node:perf_hooks';
import type { SqlExecutor } from '@notify/outbox';
import { createBatchTimer } from '@notify/runtime';
import { recordOutcomes, type RecordOutcomeParams } from './record.js';

/** Options of `createOutcomeWriter`. */
export interface OutcomeWriterOptions {
  /** Outcomes per transaction at most; when this many are waiting they are written at once. */
  readonly maxBatch: number;
  /**
   * How long the first outcome of a group waits for others before the group is written. 0:
   * until the end of the current turn of the event loop (`setImmediate`).
   */
  readonly maxDelayMs: number;
  /** Hears about every transaction the writer ran (metrics, tests). Must not throw. */
  readonly onFlush?: (flush: OutcomeFlush) => void;
  /**
   * Deliveries running now that have not handed their outcome to `record` yet and may still: the
   * consumers' deliveries before or in their provider call (`DeliveryConsumer.calling`). Those
   * past it have recorded (their outcome is queued or being written) and are not counted: they
   * cannot add to a group. When given, a group does not wait out `maxDelayMs` once this is 0:
   * nothing else could join it, so it is written at the end of the current job. Without it, a
   * drain whose running deliveries all wait for their outcomes idles for the rest of the delay.
   * On one busy key the key's next delivery is already running while an outcome waits, so there
   * the delay still cuts the groups (docs/retries.md, "Batching").
   */
  readonly yetToRecord?: () => number;
  /**
   * How long in all a group may wait while it holds an outcome whose key's next delivery is
   * running (`record`'s `keyBusy`): that key's next outcome is one provider call away. Default
   * `maxDelayMs` (no longer wait); a value below `maxDelayMs` counts as `maxDelayMs`. On one busy key the delay is what groups its consecutive
   * outcomes (the `inFlight` rule never fires while the next delivery runs); measured with
   * `pnpm bench --quick hot-key`: 5 ms made groups of two or three, 20 ms groups of five to eight
   * and about a third less service CPU per notification. Outcomes of keys with nothing behind
   * them keep `maxDelayMs`, so the commits that follow them (and wake the relay for their events
   * and retries) are not held back.
   */
  readonly busyKeyDelayMs?: number;
}

/** One group commit, as reported to `onFlush`. */
export interface OutcomeFlush {
  /** Outcomes in the group. */
  readonly size: number;
  /** Of those, recorded (guard matched); the rest were duplicates and wrote nothing. */
  readonly recorded: number;
  /** Of those, not written because the write failed (their callers' promises rejected). */
  readonly failed: number;
  /** True when the group's statement failed and its outcomes were written one by one instead. */
  readonly isolated: boolean;
  /** Wall time from sending the group to the last result, ms. */
  readonly durationMs: number;
}

/** Group commit of delivery outcomes. */
export interface OutcomeWriter {
  /**
   * Queues one outcome for the next group and resolves once the group's transaction committed:
   * true when it was recorded, false when its guard did not match (nothing of it was written).
   * Rejects when it could not be written; then nothing of it was written, unless the connection
   * broke while the COMMIT was under way (as with any single transaction). `keyBusy`, asked when
   * the group's delay is up, says whether the key's next delivery is running (`busyKeyDelayMs`).
   */
  record(params: RecordOutcomeParams, keyBusy?: () => boolean): Promise<boolean>;
  /** Writes everything queued now, and resolves once every outcome queued so far is settled. */
  flush(): Promise<void>;
  /** Outcomes queued and not yet sent to the database. */
  readonly pending: number;
  /** Outcomes sent to the database whose transaction has not finished. */
  readonly writing: number;
}

interface Entry {
  readonly params: RecordOutcomeParams;
  readonly keyBusy: (() => boolean) | undefined;
  readonly resolve: (recorded: boolean) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Creates the dispatcher's group-commit writer: outcomes of concurrently finishing deliveries are
 * written together by `recordOutcomes`, one statement (so one transaction and one WAL flush) per
 * group, when `maxBatch` are waiting or `maxDelayMs` after the first one arrived. Guarantees:
 *
 * - **Per-outcome results.** Each caller learns whether its own outcome was recorded; a guard
 *   that fails for one row (a duplicate) writes nothing for that row and does not affect others.
 * - **Durable before resolved.** A promise resolves only after its transaction committed, so a
 *   caller that acknowledges its Kafka message afterwards never acknowledges an unwritten outcome.
 * - **One notification, one outcome in flight.** A second outcome for a notification whose earlier
 *   outcome is still queued or being written waits for that write to finish and goes into a later
 *   group: the same first-wins result as two transactions one after the other.
 * - **Failure isolation.** When a group's statement fails (a value PostgreSQL refuses, a deadlock,
 *   the connection), nothing of the group was written; each outcome is then written on its own,
 *   so only the outcome that causes the failure (or all of them, if the database is down) fails.
 */
export function createOutcomeWriter(db: SqlExecutor, options: OutcomeWriterOptions): OutcomeWriter {
  const { maxBatch, maxDelayMs } = options;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch must be a whole number ≥ 1, got ${maxBatch}`);
  if (!Number.isFinite(maxDelayMs) || maxDelayMs < 0) throw new RangeError(`maxDelayMs must be ≥ 0, got ${maxDelayMs}`);
  let pending: Entry[] = [];
  /** Notification ids in a group being written now. */
  const writingIds = new Set<string>();
  const writes = new Set<Promise<void>>();
  let writingCount = 0;

  const report = (flush: OutcomeFlush) => {
    try {
      options.onFlush?.(flush);
    } catch {
      // a listener cannot break the write path
    }
  };

  const writeGroup = async (group: readonly Entry[]) => {
    const t0 = performance.now();
    try {
      const results = await recordOutcomes(
        db,
        group.map((e) => e.params),
      );
      group.forEach((e, i) => e.resolve(results[i] === true));
      report({
        size: group.length,
        recorded: results.filter(Boolean).length,
        failed: 0,
        isolated: false,
        durationMs: performance.now() - t0,
      });
      return;
    } catch (error) {
      if (group.length === 1) {
        group[0]!.reject(error);
        report({ size: 1, recorded: 0, failed: 1, isolated: false, durationMs: performance.now() - t0 });
        return;
      }
    }
    // The group's statement wrote nothing. Write each outcome on its own, so that one outcome
    // PostgreSQL refuses cannot fail (and so re-deliver) the outcomes that happened to share its group.
    let recorded = 0;
    let failed = 0;
    await Promise.all(
      group.map(async (e) => {
        try {
          const [ok] = await recordOutcomes(db, [e.params]);
          if (ok) recorded++;
          e.resolve(ok === true);
        } catch (own) {
          failed++;
          e.reject(own);
        }
      }),
    );
    report({ size: group.length, recorded, failed, isolated: true, durationMs: performance.now() - t0 });
  };

  const flushNow = () => {
    timer.cancel();
    longer?.cancel();
    while (pending.length > 0) {
      const group: Entry[] = [];
      const ids = new Set<string>();
      const rest: Entry[] = [];
      for (const e of pending) {
        const id = e.params.notification.id;
        if (group.length < maxBatch && !ids.has(id) && !writingIds.has(id)) {
          group.push(e);
          ids.add(id);
        } else rest.push(e);
      }
      pending = rest;
      if (group.length === 0) return; // all waiting behind a write of their notification; it reschedules when done
      for (const id of ids) writingIds.add(id);
      writingCount += group.length;
      const write: Promise<void> = writeGroup(group).finally(() => {
        for (const id of ids) writingIds.delete(id);
        writingCount -= group.length;
        writes.delete(write);
        if (pending.length > 0) timer.schedule();
      });
      writes.add(write);
      // Only full groups go at once; a remainder waits for company like any first outcome.
      if (pending.length < maxBatch) break;
    }
    if (pending.length > 0) timer.schedule();
  };

  const busyKeyDelayMs = Math.max(options.busyKeyDelayMs ?? 0, maxDelayMs);
  /** The rest of `busyKeyDelayMs`, started when `maxDelayMs` is up and a waiting outcome's key is busy. */
  const longer = busyKeyDelayMs > maxDelayMs ? createBatchTimer(flushNow, busyKeyDelayMs - maxDelayMs) : undefined;
  const delayUp = () => {
    if (longer && pending.some((e) => e.keyBusy?.() === true)) longer.schedule();
    else flushNow();
  };
  const timer = createBatchTimer(delayUp, maxDelayMs);

  const { yetToRecord } = options;
  let checkQueued = false;
  /**
   * Writes the waiting outcomes now when no running delivery is left to join them. Run as a
   * microtask after `record`, not inside it: the delivery that records is often the one whose
   * return starts its key's next delivery (`HandlerHooks.providerReturned`, called right after
   * `record`), and that one must count as running, or a busy key would never group.
   */
  const flushIfComplete = () => {
    checkQueued = false;
    if (pending.length > 0 && yetToRecord!() <= 0) flushNow();
  };

  return {
    record(params, keyBusy) {
      return new Promise<boolean>((resolve, reject) => {
        pending.push({ params, keyBusy, resolve, reject });
        if (pending.length >= maxBatch) flushNow();
        else {
          timer.schedule();
          if (yetToRecord && !checkQueued) {
            checkQueued = true;
            queueMicrotask(flushIfComplete);
          }
        }
      });
    },
    async flush() {
      while (pending.length > 0 || writes.size > 0) {
        if (pending.length > 0) flushNow();
        if (writes.size > 0) await Promise.race(writes);
      }
    },
    get pending() {
      return pending.length;
    },
    get writing() {
      return writingCount;
    },
  };
}
