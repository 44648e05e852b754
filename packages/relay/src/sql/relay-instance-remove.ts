import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayInstanceRemove`. */
export interface RelayInstanceRemoveParams {
  readonly instanceId: string;
}

/** Removes this instance from the live set (on stop), so the others rebalance at their next heartbeat. */
export async function relayInstanceRemove(db: SqlExecutor, params: RelayInstanceRemoveParams): Promise<void> {
  await db.query(`DELETE FROM relay_instances WHERE instance_id = $1`, [params.instanceId]);
}
