import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import type { Clock } from '@notify/runtime';
import { type EnqueueResult, MAX_BATCH_SIZE, type NotificationIntent, enqueue, enqueueMany } from '@notify/outbox';

/** Settings of `createEnqueueGroups`. */
export interface EnqueueGroupOptions {
  /** Intents written in one statement at most (1 to `MAX_BATCH_SIZE`); 1: each on its own, as `enqueue` alone. */
  readonly maxGroupSize: number;
  /** Groups being written at once at most; requests that arrive while this many are in flight form the next group. */
  readonly maxInFlight: number;
  /** The retry budget and default expiry of new notifications. */
  readonly retry: { readonly maxAttempts: number; readonly defaultTtlMs: number };
  /** Hears about every group written: its size, and whether its statement failed and its members were written one by one. Must not throw. */
  readonly onGroup?: (size: number, isolated: boolean) => void;
}

/** Group commit of single enqueues. */
export interface EnqueueGroups {
  /**
   * Queues one intent for the next group and settles once that group's statement committed (or
   * failed): the notification and whether this call created it, or the intent's own typed error
   * (`ValidationError`, `IdempotencyConflictError`, …), exactly as `enqueue(db, intent)` would.
   */
  enqueue(intent: NotificationIntent): Promise<EnqueueResult>;
  /** Intents queued and not yet sent to the database. */
  readonly pending: number;
}

interface Entry {
  readonly intent: NotificationIntent;
  readonly resolve: (result: EnqueueResult) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit for `POST /v1/notifications`: intents of concurrent requests are written together,
 * with `enqueueMany` (`notify_enqueue_batch`, not atomic) in one statement, so one round trip, one
 * transaction and one WAL flush per group instead of per request. "One in flight plus a queue",
 * without a timer: an intent that finds a free slot (fewer than `maxInFlight` groups being
 * written) goes at once, alone; those that arrive while every slot is busy wait, and the first
 * slot to free up takes up to `maxGroupSize` of them. At low load nothing waits; under load the
 * groups grow by themselves.
 *
 * - **Durable before answered.** A promise settles only after its group's statement finished, so
 *   a 202 still means committed.
 * - **Each intent its own result.** A refused intent wrote nothing and fails only its own promise
 *   with the error `enqueue` throws; the others of its group are queued.
 * - **Idempotency as in sequence.** The batch writes its items in order in one transaction, so two
 *   intents with one key in one group behave as two requests one after the other: the first is
 *   created, the second is its replay (or an `IdempotencyConflictError` for a different request).
 * - **Failure isolation.** When a group's statement fails, nothing of it was written (one
 *   statement, its own transaction). When PostgreSQL refused it (an ERROR: a deadlock with another
 *   group, a statement timeout, an intent whose JSON it cannot parse), each member is written on
 *   its own, so only the request that would have failed alone fails. When the connection broke
 *   (no answer: the commit may have happened), only members with an idempotency key are written
 *   again (a replay is harmless; up to twice, see `aloneAfterBreak`); the others get the error, as
 *   they would have alone, since writing them again could queue them twice.
 */
export function createEnqueueGroups(db: Kysely<Database>, clock: Clock, options: EnqueueGroupOptions): EnqueueGroups {
  const { maxGroupSize, maxInFlight } = options;
  if (!Number.isInteger(maxGroupSize) || maxGroupSize < 1 || maxGroupSize > MAX_BATCH_SIZE)
    throw new RangeError(`maxGroupSize must be a whole number from 1 to ${MAX_BATCH_SIZE}, got ${maxGroupSize}`);
  if (!Number.isInteger(maxInFlight) || maxInFlight < 1) throw new RangeError(`maxInFlight must be a whole number ≥ 1, got ${maxInFlight}`);
  let queue: Entry[] = [];
  let inFlight = 0;

  const settings = () => ({ now: clock.now(), maxAttempts: options.retry.maxAttempts, defaultTtlMs: options.retry.defaultTtlMs });
  const report = (size: number, isolated: boolean) => {
    try {
      options.onGroup?.(size, isolated);
    } catch {
      // a listener cannot break the write path
    }
  };
  // enqueue is one statement (notify_enqueue_item), atomic on its own: sent outside an explicit
  // transaction it is one round trip instead of three (BEGIN, the call, COMMIT).
  const alone = (e: Entry) => enqueue(db, e.intent, settings()).then(e.resolve, e.reject);
  // After a broken connection the pool can hand out that connection once more, before its socket
  // is seen closed (pg-pool keeps a client that got a FATAL answer): one more try on a fresh one.
  const aloneAfterBreak = (e: Entry) =>
    enqueue(db, e.intent, settings()).then(e.resolve, (err: unknown) => (isServerError(err) ? e.reject(err) : alone(e)));

  const writeGroup = async (group: readonly Entry[]) => {
    if (group.length === 1) {
      await alone(group[0]!);
      report(1, false);
      return;
    }
    let results;
    try {
      // Outside a transaction, too: notify_enqueue_batch is one statement, its own transaction.
      results = await enqueueMany(
        db,
        group.map((e) => e.intent),
        { ...settings(), atomic: false },
      );
    } catch (error) {
      report(group.length, true);
      if (isServerError(error)) await Promise.all(group.map(alone));
      else {
        await Promise.all(
          group.map(async (e) => {
            if (e.intent.idempotency_key !== undefined) await aloneAfterBreak(e);
            else e.reject(error);
          }),
        );
      }
      return;
    }
    results.forEach((r, i) => {
      const e = group[i]!;
      if (r.ok) e.resolve({ notification: r.notification, created: r.created });
      else e.reject(r.error);
    });
    report(group.length, false);
  };

  const pump = () => {
    while (inFlight < maxInFlight && queue.length > 0) {
      const group = queue.length <= maxGroupSize ? queue : queue.slice(0, maxGroupSize);
      queue = queue.length <= maxGroupSize ? [] : queue.slice(maxGroupSize);
      inFlight++;
      void writeGroup(group).finally(() => {
        inFlight--;
        pump();
      });
    }
  };

  return {
    enqueue(intent) {
      return new Promise<EnqueueResult>((resolve, reject) => {
        queue.push({ intent, resolve, reject });
        pump();
      });
    },
    get pending() {
      return queue.length;
    },
  };
}

/**
 * True when PostgreSQL answered the statement with an ERROR (pg's DatabaseError): the statement,
 * and so its transaction, was rolled back. FATAL and PANIC end the connection, and an error without
 * a severity (a broken socket, a timeout waiting for a connection) leaves open whether it committed.
 */
function isServerError(error: unknown): boolean {
  return (error as { severity?: unknown } | null)?.severity === 'ERROR';
}
