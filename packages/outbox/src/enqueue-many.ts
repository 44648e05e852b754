import { prepared, toExecutor, type TransactionLike } from './db/executor.js';
import type { Notification } from './db/schema.js';
import {
  createdNotification,
  type EnqueueOptions,
  type ComputedColumns,
  enqueueSettings,
  intentJson,
  LEAN_COLUMNS,
  plainNotification,
  type PlainSettings,
  type Refusal,
  refusalError,
  storedAsGiven,
  storedNotification,
} from './enqueue.js';
import { PLAIN_BATCH_SQL, plainBatch } from './enqueue-plain.js';
import { BatchRefusedError, type BatchItemError, IdempotencyInProgressError, NotifyError } from './errors.js';
import type { NotificationIntent } from './model/intent.js';

/** Most intents one `enqueueMany` call takes (the limit of `notify_enqueue_batch`). */
export const MAX_BATCH_SIZE = 1000;

/** What `enqueueMany` needs besides the transaction. */
export interface EnqueueManyOptions extends EnqueueOptions {
  /** True: one refused intent refuses the whole batch (`BatchRefusedError`, nothing queued). Default false: it fails only itself. */
  readonly atomic?: boolean;
}

/** The result of one intent of a batch, in the batch's order. */
export type EnqueueManyResult =
  | { readonly ok: true; readonly notification: Notification; readonly created: boolean }
  | { readonly ok: false; readonly error: NotifyError };

type BatchRow = ComputedColumns & { readonly ord: number; readonly created: boolean | null; readonly refusal: Refusal | null };

// One round trip for the whole batch (migration 0040). Refused items come back with all
// notification columns NULL. As for enqueue, only the columns PostgreSQL computed: a created row
// is rebuilt from its intent (createdNotification), and only a repeated key's original (or a row
// storedAsGiven cannot rebuild) is read whole, afterwards. PostgreSQL prints 13 columns per item
// instead of 31 and pg parses as many (BENCHMARKS.md, "enqueue(), session 10").
const ENQUEUE_BATCH_SQL = prepared(
  'notify_enqueue_batch_v2',
  `SELECT r.ord, r.created, r.refusal, ${LEAN_COLUMNS} FROM notify_enqueue_batch($1::jsonb, $2::jsonb, $3) AS r ORDER BY r.ord`,
);

/**
 * Queues up to 1000 intents in the caller's transaction in one round trip, each exactly as
 * `enqueue` would (same validation, idempotency per item, delivery options). Returns one result
 * per intent, in order: the notification (and `created: false` for a repeated idempotency key),
 * or the typed error of a refused intent, which wrote nothing. With `atomic: true`, one refused
 * intent throws `BatchRefusedError` listing every refused one, and nothing of the batch is queued
 * (the caller's transaction stays usable).
 *
 * Throws `RangeError` for an empty batch or one over `MAX_BATCH_SIZE`.
 */
export async function enqueueMany(
  tx: TransactionLike,
  intents: readonly NotificationIntent[],
  options: EnqueueManyOptions = {},
): Promise<EnqueueManyResult[]> {
  if (intents.length < 1 || intents.length > MAX_BATCH_SIZE)
    throw new RangeError(`enqueueMany takes 1 to ${MAX_BATCH_SIZE} intents, not ${intents.length}`);
  // Every intent plain (the API's groups, most callers' batches): the rows computed here, one INSERT
  // of each table, nothing for notify_enqueue_batch to check or refuse (enqueue-plain.ts).
  const plain = plainBatch(intents, options);
  if (plain !== null) {
    const { rows } = await toExecutor(tx).query<PlainSettings>(PLAIN_BATCH_SQL, plain.values);
    const settings = rows[0];
    if (!settings) throw new Error('the plain batch statement returned no row');
    return plain.writes.map((write, i) => ({ ok: true, notification: plainNotification(intents[i]!, write, settings), created: true }));
  }
  const results = new Array<EnqueueManyResult | undefined>(intents.length);
  // What cannot even become JSON text for PostgreSQL is refused here, item by item.
  const texts: string[] = [];
  const positions: number[] = [];
  const refused: BatchItemError[] = [];
  intents.forEach((intent, index) => {
    try {
      texts.push(intentJson(intent));
      positions.push(index);
    } catch (err) {
      if (!(err instanceof NotifyError)) throw err;
      results[index] = { ok: false, error: err };
      refused.push({ index, error: err });
    }
  });
  if (options.atomic && refused.length > 0) throw new BatchRefusedError(refused);
  if (texts.length > 0) {
    const { rows } = await toExecutor(tx).query<BatchRow>(ENQUEUE_BATCH_SQL, [
      `[${texts.join(',')}]`,
      enqueueSettings(options),
      options.atomic ?? false,
    ]);
    const originals: { index: number; id: string; created: boolean }[] = [];
    for (const row of rows) {
      const index = positions[row.ord - 1]!;
      const intent = intents[index]!;
      if (row.refusal) {
        const error = refusalError(row.refusal);
        results[index] = { ok: false, error };
        refused.push({ index, error });
      } else if (row.created && storedAsGiven(intent)) {
        results[index] = { ok: true, notification: createdNotification(intent, row), created: true };
      } else {
        originals.push({ index, id: row.id, created: row.created ?? false });
      }
    }
    if (options.atomic && refused.length > 0) throw new BatchRefusedError(refused.sort((a, b) => a.index - b.index));
    // A repeat's original (rare): read after the batch, in the same transaction, as enqueue does.
    // Gone since (IdempotencyInProgressError: retry): that item's error, or with atomic the whole
    // call's, since the others are written and the caller must roll them back.
    for (const { index, id, created } of originals) {
      try {
        results[index] = { ok: true, notification: await storedNotification(tx, id), created };
      } catch (err) {
        if (options.atomic || !(err instanceof IdempotencyInProgressError)) throw err;
        results[index] = { ok: false, error: err };
      }
    }
  }
  return results.map((r, i) => {
    if (!r) throw new Error(`notify_enqueue_batch returned no row for item ${i}`);
    return r;
  });
}
