import type { SqlExecutor } from '@notify/outbox';

/**
 * Status callbacks waiting to be sent (first try or a retry), over every tenant. Reads only the
 * partial index of pending rows (callback_deliveries_tenant_pending_idx, migration 0101), which the
 * intake keeps to at most 10,000 rows per tenant: bounded by the backlog, never by the history.
 */
export async function callbackDeliveryCountPending(db: SqlExecutor): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM callback_deliveries WHERE state = 'pending'`, []);
  return rows[0]?.n ?? 0;
}
