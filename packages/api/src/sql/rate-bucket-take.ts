import type { SqlExecutor } from '@notify/outbox';

/** One bucket to take a token from. */
export interface RateBucketSpec {
  /** 'key:<id>' or 'tenant:<id>'. */
  readonly bucket: string;
  /** Tokens refilled per second. */
  readonly perSecond: number;
  /** Capacity: the burst. */
  readonly burst: number;
}

/** Parameters of `rateBucketTake`. */
export interface RateBucketTakeParams {
  readonly buckets: readonly RateBucketSpec[];
  readonly now: Date;
}

/** A bucket after the take. */
export interface RateBucketState {
  readonly bucket: string;
  readonly allowed: boolean;
  /** Tokens left (fractional). */
  readonly tokens: number;
}

/**
 * Refills each bucket for the time since its last request (capped at the burst) and takes one
 * token where there is one: one upsert per bucket, each its own statement (autocommit), so a
 * bucket row is locked only for that statement, and every API process shares the same rows. In
 * the order given (key, then tenant): a bucket that refuses takes no token and the later ones are
 * not touched; a request refused by the tenant bucket has still taken its key's token.
 */
export async function rateBucketTake(db: SqlExecutor, params: RateBucketTakeParams): Promise<RateBucketState[]> {
  const states: RateBucketState[] = [];
  for (const b of params.buckets) {
    // $5: the bucket refilled for the time since its last request, capped at the burst.
    const { rows } = await db.query<{ allowed: boolean; tokens: number }>(
      `INSERT INTO api_rate_buckets AS r (bucket, tokens, updated_at, allowed)
       VALUES ($1, $3::float8 - 1, $4::timestamptz, true)
       ON CONFLICT (bucket) DO UPDATE SET
         tokens = CASE WHEN ${REFILL} >= 1 THEN ${REFILL} - 1 ELSE ${REFILL} END,
         allowed = ${REFILL} >= 1,
         updated_at = greatest(r.updated_at, $4::timestamptz)
       RETURNING r.allowed, r.tokens`,
      [b.bucket, b.perSecond, b.burst, params.now],
    );
    states.push({ bucket: b.bucket, allowed: rows[0]!.allowed, tokens: Number(rows[0]!.tokens) });
    if (!rows[0]!.allowed) break; // refused: the later buckets keep their tokens
  }
  return states;
}

const REFILL = 'least($3::float8, r.tokens + greatest(0, extract(epoch FROM ($4::timestamptz - r.updated_at))) * $2::float8)';
