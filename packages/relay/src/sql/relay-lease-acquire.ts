import type { SqlExecutor } from '@notify/outbox';
import { SLOT_LOCK_NAMESPACE } from './relay-slot-lock.js';

/** Parameters of `relayLeaseAcquire`. */
export interface RelayLeaseAcquireParams {
  readonly instanceId: string;
  readonly now: Date;
  readonly expiresAt: Date;
  /** At most this many slots. */
  readonly count: number;
}

/**
 * Takes up to `count` slots that are free or whose lease has expired, and returns them.
 *
 * A slot is taken only with its exclusive advisory lock: a previous owner whose claim
 * transaction is still open holds the shared lock (`relaySlotLock`), so the slot is skipped
 * until that batch has committed or rolled back. A new owner never publishes a slot while the
 * old owner's batch is in flight. FOR UPDATE on the lease row re-checks "free or expired" on the
 * newest row version, so a renewal that committed after this statement's snapshot wins.
 */
export async function relayLeaseAcquire(db: SqlExecutor, params: RelayLeaseAcquireParams): Promise<number[]> {
  if (params.count <= 0) return [];
  const { rows } = await db.query<{ slot: number }>(
    `UPDATE relay_leases l
        SET owner = $1, expires_at = $3
       FROM (SELECT slot FROM relay_leases
              WHERE (owner IS NULL OR expires_at <= $2)
                AND pg_try_advisory_xact_lock($5, slot)
              ORDER BY slot
              LIMIT $4
              FOR UPDATE SKIP LOCKED) free
      WHERE l.slot = free.slot
      RETURNING l.slot`,
    [params.instanceId, params.now, params.expiresAt, params.count, SLOT_LOCK_NAMESPACE],
  );
  return rows.map((r) => r.slot).sort((a, b) => a - b);
}
