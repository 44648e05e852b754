import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `optOutDeleteSeen`: an opt-out as stored, and when it was recorded as the page showed it. */
export interface OptOutDeleteSeenParams {
  readonly tenantId: string;
  readonly channel: string;
  /** Exactly as stored (already normalized). */
  readonly recipient: string;
  readonly category: string;
  /** Its created_at as the confirmation page showed it (milliseconds, as a Date holds it). */
  readonly createdAt: Date;
}

/**
 * Removes the opt-out the operator confirmed, and only that one: when it was removed meanwhile
 * and recorded again (the recipient asked again), its created_at differs and nothing is removed,
 * so a stale or repeated confirmation cannot undo a newer opt-out. Returns whether a row went.
 */
export async function optOutDeleteSeen(db: SqlExecutor, params: OptOutDeleteSeenParams): Promise<boolean> {
  const { rows } = await db.query(
    `DELETE FROM suppressions
      WHERE tenant_id = $1 AND channel = $2 AND recipient = $3 AND category = $4
        AND date_trunc('milliseconds', created_at) = $5
     RETURNING 1`,
    [params.tenantId, params.channel, params.recipient, params.category, params.createdAt],
  );
  return rows.length > 0;
}
