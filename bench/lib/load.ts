import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { type NotificationIntent, enqueue, enqueueMany, fromPgClient } from '@notify/outbox';
import type { BenchJob } from '../workers/pgboss-worker.js';
import { sleep } from './stats.js';
import { benchPool } from './pool.js';

/**
 * Distinct recipients the end-to-end workloads spread over. Notifications of one recipient are
 * delivered one at a time, in order (the ordering guarantee), so a single-recipient workload
 * measures one key's latency chain, not the system; 1,000 endpoints is a modest tenant base.
 */
const RECIPIENTS = 1_000;

/** The template variables of an order notification: the `data` the enqueue and http-enqueue scenarios' data variants carry. */
export const ORDER_DATA = { order: 'A-1042', items: ['book', 'pen'], total: 23.5 };

/** The notification every end-to-end scenario sends: a small webhook to the local receiver, recipient `n mod RECIPIENTS`. */
export function webhookIntent(receiverUrl: string, n: number): NotificationIntent {
  return {
    tenant_id: 'bench',
    channel: 'webhook',
    to: `${receiverUrl}/${n % RECIPIENTS}`,
    body: `Order ${n} has shipped.`,
    data: { order: n },
  };
}

/** The pg-boss job end-to-end queues: the same body as `webhookIntent`'s notification `n`. */
export function pgBossJob(n: number): BenchJob {
  return {
    id: randomUUID(),
    tenant_id: 'bench',
    body: `Order ${n} has shipped.`,
    data: { order: n },
    created_at: new Date().toISOString(),
  };
}

/** A notification for the one hot recipient: every one to the same URL, hence the same key. */
export function hotKeyIntent(receiverUrl: string, n: number): NotificationIntent {
  return { tenant_id: 'bench', channel: 'webhook', to: `${receiverUrl}/hot`, body: `Order ${n} has shipped.`, data: { order: n } };
}

/**
 * Queues `count` notifications through enqueue(), `perTx` per transaction on `clients`
 * connections: the fastest honest way to build a backlog (each row and its outbox rows are the
 * real ones). Returns the ids.
 */
export async function prefillNotifications(
  url: string,
  count: number,
  to: string,
  options: { clients?: number; perTx?: number; intent?: (receiverUrl: string, n: number) => NotificationIntent } = {},
): Promise<string[]> {
  const intent = options.intent ?? webhookIntent;
  const clients = options.clients ?? 4;
  const perTx = options.perTx ?? 200;
  const pool = benchPool(url, clients, 'notify-bench-prefill');
  const ids: string[] = [];
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        const client = await pool.connect();
        try {
          while (next < count) {
            const from = next;
            const to_ = Math.min(count, from + perTx);
            next = to_;
            await client.query('BEGIN');
            for (let i = from; i < to_; i++) ids.push((await enqueue(client, intent(to, i))).notification.id);
            await client.query('COMMIT');
          }
        } finally {
          client.release();
        }
      }),
    );
  } finally {
    await pool.end();
  }
  return ids;
}

/**
 * Queues `count` notifications (numbered from `from`) in ONE transaction, by `enqueueMany` in
 * chunks of 1,000, so the relay sees the whole backlog at once when it commits (the warm drain).
 */
export async function prefillAtOnce(url: string, count: number, to: string, from = 0): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: 'notify-bench-prefill' });
  await client.connect();
  try {
    const tx = fromPgClient(client);
    await client.query('BEGIN');
    for (let i = 0; i < count; i += 1_000) {
      await enqueueMany(
        tx,
        Array.from({ length: Math.min(1_000, count - i) }, (_, k) => webhookIntent(to, from + i + k)),
      );
    }
    await client.query('COMMIT');
  } finally {
    await client.end();
  }
}

/** What `offerAtRate` reports. */
export interface OfferResult {
  readonly issued: number;
  readonly failed: number;
  /** Issued per second over the window: below the target means the load generator could not keep up. */
  readonly achievedRate: number;
  /** Ticks at which the in-flight cap held back work (the generator fell behind). */
  readonly stalls: number;
}

/**
 * Issues `op(n)` at `rate` per second for `durationMs`, paced against the clock (not against
 * completions), with at most `maxInFlight` outstanding. Each op records its own timing.
 */
export async function offerAtRate(options: {
  rate: number;
  durationMs: number;
  maxInFlight: number;
  op: (n: number) => Promise<void>;
}): Promise<OfferResult> {
  const start = performance.now();
  let issued = 0;
  let failed = 0;
  let stalls = 0;
  const inFlight = new Set<Promise<void>>();
  for (;;) {
    const elapsed = performance.now() - start;
    if (elapsed >= options.durationMs) break;
    const due = Math.floor((options.rate * elapsed) / 1000);
    while (issued < due) {
      if (inFlight.size >= options.maxInFlight) {
        stalls++;
        break;
      }
      const p: Promise<void> = options
        .op(issued)
        .catch(() => {
          failed++;
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      issued++;
    }
    await sleep(2);
  }
  const window = performance.now() - start;
  await Promise.all(inFlight);
  return { issued, failed, achievedRate: issued / (window / 1000), stalls };
}

/** A pg pool for single-row business transactions: BEGIN; enqueue; COMMIT. Records the commit instant. */
export function createEnqueuer(url: string, clients: number) {
  const pool = benchPool(url, clients, 'notify-bench-loader');
  const guarded = new WeakSet<pg.PoolClient>();
  return {
    /** Enqueues one notification in its own transaction; resolves with its id and performance.now() right after COMMIT returned. */
    async enqueueOne(intent: NotificationIntent): Promise<{ id: string; committedAt: number }> {
      const client = await pool.connect();
      if (!guarded.has(client)) {
        // A checked-out client reports a lost connection on itself, not on the pool; the query rejects anyway.
        client.on('error', () => {});
        guarded.add(client);
      }
      try {
        await client.query('BEGIN');
        const { notification } = await enqueue(client, intent);
        await client.query('COMMIT');
        return { id: notification.id, committedAt: performance.now() };
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    /**
     * Opens every one of the pool's connections and runs one enqueue on each, rolled back: the
     * server's per-connection start (a backend, its catalog caches, the enqueue function compiled,
     * the prepared statement planned) happens here instead of in the first second of a measured
     * window, where the generator's own warm-up competed with the pipeline it measures. Nothing
     * is queued.
     */
    async warm(intent: NotificationIntent): Promise<void> {
      const opened = await Promise.allSettled(Array.from({ length: clients }, () => pool.connect()));
      const held = opened.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
      try {
        const failed = opened.find((o) => o.status === 'rejected');
        if (failed) throw failed.reason;
        for (const client of held) {
          client.on('error', () => {});
          guarded.add(client);
        }
        await Promise.all(
          held.map(async (client) => {
            await client.query('BEGIN');
            try {
              await enqueue(client, intent);
            } finally {
              await client.query('ROLLBACK');
            }
          }),
        );
      } finally {
        for (const client of held) client.release();
      }
    },
    close: () => pool.end(),
  };
}

/**
 * Warms a just-started service: `rate`/s of ordinary notifications for `durationMs` (JIT, pools,
 * consumer fetch sessions), then waits until they have all arrived. Nothing of it is measured.
 */
export async function warmUp(
  url: string,
  receiverUrl: string,
  arrived: () => number,
  options: { rate: number; durationMs: number },
): Promise<void> {
  const enqueuer = createEnqueuer(url, 8);
  const before = arrived();
  try {
    const { issued } = await offerAtRate({
      rate: options.rate,
      durationMs: options.durationMs,
      maxInFlight: 32,
      op: (n) => enqueuer.enqueueOne(webhookIntent(receiverUrl, n)).then(() => {}),
    });
    const deadline = performance.now() + 30_000;
    while (arrived() - before < issued && performance.now() < deadline) await sleep(100);
  } finally {
    await enqueuer.close();
  }
}
