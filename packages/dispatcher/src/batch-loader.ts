import { createBatchTimer } from '@notify/runtime';

/** Options of `createBatchLoader`. */
export interface BatchLoaderOptions<K, V> {
  /** Loads many keys with one query: one value per key, in the order of `keys` (keys are distinct). */
  readonly loadMany: (keys: readonly K[]) => Promise<readonly V[]>;
  /** Keys per query at most; more requests start another query at once. */
  readonly maxBatch: number;
  /**
   * How long the first request of a batch waits for company. 0: until the end of the current
   * turn of the event loop (`setImmediate`), which gathers every request made by the same wave
   * of resolved promises at no added latency.
   */
  readonly delayMs: number;
  /** Identity of a key, for de-duplication. Default: the key itself (string keys). */
  readonly keyOf?: (key: K) => string;
}

/** A micro-batching loader: requests made close together are served by one `loadMany` call. */
export interface BatchLoader<K, V> {
  /** The value of one key, from the next batch. Rejects when its query failed (see `createBatchLoader`). */
  load(key: K): Promise<V>;
}

interface Waiter<K, V> {
  readonly key: K;
  readonly id: string;
  readonly resolve: (value: V) => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Creates a `BatchLoader` (the DataLoader pattern, without a cache: every request is answered by
 * a query sent after it was made, so a batched read is exactly as fresh as a single one).
 *
 * Failure isolation: when a batch of several keys fails, each key is loaded again on its own and
 * each request gets its own key's result or error. So one poisonous key (a value PostgreSQL
 * refuses) fails only its own requests, never its batch-mates, and a database outage still fails
 * every request.
 */
export function createBatchLoader<K, V>(options: BatchLoaderOptions<K, V>): BatchLoader<K, V> {
  const { loadMany, maxBatch, delayMs } = options;
  if (!Number.isInteger(maxBatch) || maxBatch < 1) throw new RangeError(`maxBatch must be a whole number ≥ 1, got ${maxBatch}`);
  if (!Number.isFinite(delayMs) || delayMs < 0) throw new RangeError(`delayMs must be ≥ 0, got ${delayMs}`);
  const keyOf = options.keyOf ?? ((k: K) => k as unknown as string);
  let pending: Waiter<K, V>[] = [];

  const settle = async (keys: readonly K[], waiters: ReadonlyMap<string, Waiter<K, V>[]>) => {
    const values = await loadMany(keys);
    if (values.length !== keys.length) throw new Error(`batch loader: loadMany returned ${values.length} values for ${keys.length} keys`);
    keys.forEach((key, i) => {
      for (const w of waiters.get(keyOf(key)) ?? []) w.resolve(values[i] as V);
    });
  };

  const run = async (batch: readonly Waiter<K, V>[]) => {
    const byId = new Map<string, Waiter<K, V>[]>();
    const keys: K[] = [];
    for (const w of batch) {
      const same = byId.get(w.id);
      if (same) same.push(w);
      else {
        byId.set(w.id, [w]);
        keys.push(w.key);
      }
    }
    try {
      await settle(keys, byId);
    } catch (error) {
      if (keys.length === 1) {
        for (const w of batch) w.reject(error);
        return;
      }
      await Promise.all(
        keys.map(async (key) => {
          const mine = byId.get(keyOf(key)) ?? [];
          try {
            await settle([key], new Map([[keyOf(key), mine]]));
          } catch (own) {
            for (const w of mine) w.reject(own);
          }
        }),
      );
    }
  };

  const dispatch = () => {
    timer.cancel();
    while (pending.length > 0) {
      const batch = pending.slice(0, maxBatch);
      pending = pending.slice(maxBatch);
      void run(batch);
    }
  };

  const timer = createBatchTimer(dispatch, delayMs);

  return {
    load(key) {
      return new Promise<V>((resolve, reject) => {
        pending.push({ key, id: keyOf(key), resolve, reject });
        if (pending.length >= maxBatch) dispatch();
        else timer.schedule();
      });
    },
  };
}
