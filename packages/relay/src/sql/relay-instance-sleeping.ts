import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayInstanceSleeping`. */
export interface RelayInstanceSleepingParams {
  readonly instanceId: string;
  /** True: this instance is about to wait for a NOTIFY; false: it is publishing. */
  readonly sleeping: boolean;
}

/**
 * Tells the outbox trigger whether this instance waits for a wake-up. The trigger rings
 * (`pg_notify`) only while some relay sleeps, because a notifying transaction takes
 * PostgreSQL's global notify lock through its commit, which serialises the commits of every
 * enqueue (migration 0002 has the numbers).
 */
export async function relayInstanceSleeping(db: SqlExecutor, params: RelayInstanceSleepingParams): Promise<void> {
  await db.query('UPDATE relay_instances SET sleeping = $2 WHERE instance_id = $1', [params.instanceId, params.sleeping]);
}
