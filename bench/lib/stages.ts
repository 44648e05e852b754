import type pg from 'pg';
import { latencySummary } from './stats.js';

/** Where a first delivery's time went, stage by stage (milliseconds; p50/p90/p99/max per stage). */
export interface StageBreakdown {
  /** notifications.created_at (set by enqueue just before its INSERT) → the relay marked the request row published. */
  readonly enqueueToPublished: ReturnType<typeof latencySummary>;
  /** published → the dispatcher started attempt 1 (Kafka, consumer fetch, in-flight queue, the notification read). */
  readonly publishedToAttempt: ReturnType<typeof latencySummary>;
  /** attempt 1 started → the receiver saw the request (content, provider, HTTP). */
  readonly attemptToArrival: ReturnType<typeof latencySummary>;
  readonly count: number;
  /** Per second of enqueue time (from the first): count and p50/p99 of the whole enqueue → arrival, to tell start-up from steady state. */
  readonly perSecond: readonly { readonly second: number; readonly count: number; readonly p50: number; readonly p99: number }[];
}

/**
 * Splits each notification's enqueue → arrival time into stages, from the rows the service wrote
 * (all timestamps come from this machine's clock) and the receiver's arrival instants.
 */
export async function stageBreakdown(
  pool: pg.Pool,
  firstDelivered: ReadonlyMap<string, number>,
  ids: readonly string[],
): Promise<StageBreakdown> {
  const { rows } = await pool.query<{ id: string; created_at: Date; published_at: Date | null; started_at: Date | null }>(
    `SELECT n.id, n.created_at, o.published_at, a.started_at
       FROM notifications n
       JOIN outbox_published o ON o.topic = 'requests' AND o.notification_id = n.id
       LEFT JOIN attempts a ON a.notification_id = n.id AND a.attempt = 1
      WHERE n.id = ANY($1::text[])`,
    [ids],
  );
  const relay: number[] = [];
  const consume: number[] = [];
  const send: number[] = [];
  const buckets = new Map<number, number[]>();
  const t0 = Math.min(...rows.map((r) => r.created_at.getTime()));
  for (const r of rows) {
    const arrived = firstDelivered.get(r.id);
    if (!r.published_at || !r.started_at || arrived === undefined) continue;
    const arrivedWall = performance.timeOrigin + arrived;
    relay.push(r.published_at.getTime() - r.created_at.getTime());
    consume.push(r.started_at.getTime() - r.published_at.getTime());
    send.push(arrivedWall - r.started_at.getTime());
    const second = Math.floor((r.created_at.getTime() - t0) / 1000);
    let b = buckets.get(second);
    if (!b) buckets.set(second, (b = []));
    b.push(arrivedWall - r.created_at.getTime());
  }
  return {
    enqueueToPublished: latencySummary(relay),
    publishedToAttempt: latencySummary(consume),
    attemptToArrival: latencySummary(send),
    count: relay.length,
    perSecond: [...buckets.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([second, xs]) => {
        const l = latencySummary(xs);
        return { second, count: l.count, p50: Math.round(l.p50), p99: Math.round(l.p99) };
      }),
  };
}
