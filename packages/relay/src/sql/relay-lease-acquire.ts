import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayLeaseAcquire`. */
export interface RelayLeaseAcquireParams {
  readonly instanceId: string;
  readonly now: Date;
  readonly expiresAt: Date;
  /** At most this many slots. */
  readonly count: number;
}

/**
 * Takes up to `count` slots that are free or whose lease has expired, and returns them. Uses
 * FOR UPDATE SKIP LOCKED on the lease rows: a slot whose previous owner still has a claim
 * transaction open (FOR KEY SHARE, see `relayLeaseLockHeld`) is skipped until that transaction
 * ends, so a new owner never publishes a slot while the old owner's batch is in flight.
 */
export async function relayLeaseAcquire(db: SqlExecutor, params: RelayLeaseAcquireParams): Promise<number[]> {
  if (params.count <= 0) return [];
  const { rows } = await db.query<{ slot: number }>(
    `UPDATE relay_leases l
        SET owner = $1, expires_at = $3
       FROM (SELECT slot FROM relay_leases
              WHERE owner IS NULL OR expires_at <= $2
              ORDER BY slot
              LIMIT $4
              FOR UPDATE SKIP LOCKED) free
      WHERE l.slot = free.slot
      RETURNING l.slot`,
    [params.instanceId, params.now, params.expiresAt, params.count],
  );
  return rows.map((r) => r.slot).sort((a, b) => a - b);
}
