import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayLeaseLockHeld`. */
export interface RelayLeaseLockHeldParams {
  readonly instanceId: string;
  readonly now: Date;
}

/**
 * In the claim transaction: the slots this instance holds with an unexpired lease, locked
 * FOR KEY SHARE until the transaction ends. A takeover needs FOR UPDATE on the lease row, so no
 * other instance can take these slots while this batch is in flight, even if the lease expires
 * meanwhile (renewals and releases are plain UPDATEs of non-key columns and do not conflict).
 */
export async function relayLeaseLockHeld(db: SqlExecutor, params: RelayLeaseLockHeldParams): Promise<number[]> {
  const { rows } = await db.query<{ slot: number }>(
    `SELECT slot FROM relay_leases
      WHERE owner = $1 AND expires_at > $2
      ORDER BY slot
      FOR KEY SHARE`,
    [params.instanceId, params.now],
  );
  return rows.map((r) => r.slot);
}
