import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayLeaseRelease`. */
export interface RelayLeaseReleaseParams {
  readonly instanceId: string;
  /** Slots to give up; omitted: all of this instance's slots (on stop). */
  readonly slots?: readonly number[];
}

/**
 * Gives up leases so another instance can take them at once, without waiting for expiry. Safe
 * while a batch of these slots is in flight: that batch's shared advisory lock still fences the
 * taker until it commits. Returns the released slots.
 */
export async function relayLeaseRelease(db: SqlExecutor, params: RelayLeaseReleaseParams): Promise<number[]> {
  const { rows } = await db.query<{ slot: number }>(
    `UPDATE relay_leases SET owner = NULL, expires_at = NULL
      WHERE owner = $1 AND ($2::int[] IS NULL OR slot = ANY($2::int[]))
      RETURNING slot`,
    [params.instanceId, params.slots ?? null],
  );
  return rows.map((r) => r.slot).sort((a, b) => a - b);
}
