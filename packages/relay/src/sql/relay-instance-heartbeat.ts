import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `relayInstanceHeartbeat`. */
export interface RelayInstanceHeartbeatParams {
  readonly instanceId: string;
  readonly now: Date;
  /** This instance counts as live until then. */
  readonly expiresAt: Date;
}

/**
 * Records that this instance is alive until `expiresAt`, forgets instances that expired, and
 * returns the ids of every live instance (this one included), sorted.
 */
export async function relayInstanceHeartbeat(db: SqlExecutor, params: RelayInstanceHeartbeatParams): Promise<string[]> {
  const { rows } = await db.query<{ instance_id: string }>(
    `WITH me AS (
       INSERT INTO relay_instances (instance_id, started_at, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (instance_id) DO UPDATE SET expires_at = EXCLUDED.expires_at
       RETURNING instance_id
     ), gone AS (
       DELETE FROM relay_instances WHERE expires_at <= $2 AND instance_id <> $1
     )
     SELECT instance_id FROM relay_instances WHERE expires_at > $2 AND instance_id <> $1
     UNION
     SELECT instance_id FROM me
     ORDER BY 1`,
    [params.instanceId, params.now, params.expiresAt],
  );
  return rows.map((r) => r.instance_id);
}
