import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayLeaseRenew`. */
export interface RelayLeaseRenewParams {
  readonly instanceId: string;
  readonly expiresAt: Date;
}

/**
 * Extends every lease this instance owns and returns their slots: the authoritative list of
 * what it holds. A lease that expired but was not taken is still owned, and renewing it is safe
 * (nobody else published that slot meanwhile: taking it would have changed the owner).
 */
export async function relayLeaseRenew(db: SqlExecutor, params: RelayLeaseRenewParams): Promise<number[]> {
  const { rows } = await db.query<{ slot: number }>(`UPDATE relay_leases SET expires_at = $2 WHERE owner = $1 RETURNING slot`, [
    params.instanceId,
    params.expiresAt,
  ]);
  return rows.map((r) => r.slot).sort((a, b) => a - b);
}
