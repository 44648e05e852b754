import type { SqlExecutor } from '@notify/outbox';

/** The number of hash slots (rows of `relay_leases`), read once at start. */
export async function relaySlotCount(db: SqlExecutor): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM relay_leases`, []);
  return rows[0]?.n ?? 0;
}
