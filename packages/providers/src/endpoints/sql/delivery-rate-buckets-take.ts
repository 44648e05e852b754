import type { SqlExecutor } from '@notify/outbox';

/** One bucket to take tokens from. */
export interface DeliveryRateBucketSpec {
  /** `tenant:<id>` or `endpoint:<id>`. */
  readonly bucket: string;
  readonly perSecond: number;
  readonly burst: number;
  /** Tokens wanted (a dispatcher takes a few at once and spends them locally). */
  readonly want: number;
}

/** A bucket after the take. */
export interface DeliveryRateBucketTaken {
  readonly bucket: string;
  /** Tokens granted, 0 to `want`. */
  readonly granted: number;
  /** Tokens left in the shared bucket (fractional). */
  readonly tokens: number;
}

/**
 * Refills each bucket for the time since its last take (capped at the burst) and takes up to
 * `want` whole tokens from it: one statement for every bucket given, so several dispatcher
 * processes draw from the same rows (`delivery_rate_buckets`) and the sum of what they send
 * never exceeds the bucket's rate plus its burst. Rows are locked in bucket order.
 */
export async function deliveryRateBucketsTake(
  db: SqlExecutor,
  params: { readonly buckets: readonly DeliveryRateBucketSpec[]; readonly now: Date },
): Promise<DeliveryRateBucketTaken[]> {
  if (params.buckets.length === 0) return [];
  const sorted = [...params.buckets].sort((a, b) => (a.bucket < b.bucket ? -1 : a.bucket > b.bucket ? 1 : 0));
  // The inserted row carries the rate, the burst and (in `granted`) the tokens wanted, capped at
  // the burst; on conflict they are read back from `excluded`.
  const { rows } = await db.query<{ bucket: string; granted: number; tokens: number }>(
    `INSERT INTO delivery_rate_buckets AS r (bucket, tokens, updated_at, granted, per_second, burst)
     SELECT i.bucket, i.burst - least(i.want, floor(i.burst)), $5::timestamptz, least(i.want, floor(i.burst))::int, i.per_second, i.burst
       FROM unnest($1::text[], $2::float8[], $3::float8[], $4::int[]) AS i(bucket, per_second, burst, want)
     ON CONFLICT (bucket) DO UPDATE SET
       granted = least(excluded.granted, floor(${REFILL}))::int,
       tokens = ${REFILL} - least(excluded.granted, floor(${REFILL})),
       updated_at = greatest(r.updated_at, $5::timestamptz),
       per_second = excluded.per_second,
       burst = excluded.burst
     RETURNING r.bucket, r.granted, r.tokens`,
    [sorted.map((b) => b.bucket), sorted.map((b) => b.perSecond), sorted.map((b) => b.burst), sorted.map((b) => b.want), params.now],
  );
  const byBucket = new Map(rows.map((r) => [r.bucket, r]));
  return params.buckets.map((b) => {
    const r = byBucket.get(b.bucket)!;
    return { bucket: b.bucket, granted: Number(r.granted), tokens: Number(r.tokens) };
  });
}

// The bucket refilled for the time since its last take, capped at the burst.
const REFILL = 'least(excluded.burst, r.tokens + greatest(0, extract(epoch FROM ($5::timestamptz - r.updated_at))) * excluded.per_second)';
