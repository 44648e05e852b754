import { prepared, toExecutor, type TransactionLike } from './db/executor.js';
import type { Notification } from './db/schema.js';
import { enqueueSettings, intentJson, type EnqueueOptions, type Refusal, refusalError } from './enqueue.js';
import { BatchRefusedError, type BatchItemError, NotifyError } from './errors.js';
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

type BatchRow = Notification & { readonly ord: number; readonly created: boolean | null; readonly refusal: Refusal | null };

// One round trip for the whole batch (migration 0040). Refused items come back with all
// notification columns NULL.
const ENQUEUE_BATCH_SQL = prepared(
  'notify_enqueue_batch_v1',
  'SELECT b.ord, b.created, b.refusal, (b.notification).* FROM notify_enqueue_batch($1::jsonb, $2::jsonb, $3) AS b ORDER BY b.ord',
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
    for (const row of rows) {
      const { ord, created, refusal, ...notification } = row;
      const index = positions[ord - 1]!;
      if (refusal) {
        const error = refusalError(refusal);
        results[index] = { ok: false, error };
        refused.push({ index, error });
      } else {
        results[index] = { ok: true, notification, created: created ?? false };
      }
    }
  }
  if (options.atomic && refused.length > 0) throw new BatchRefusedError(refused.sort((a, b) => a.index - b.index));
  return results.map((r, i) => {
    if (!r) throw new Error(`notify_enqueue_batch returned no row for item ${i}`);
    return r;
  });
}
