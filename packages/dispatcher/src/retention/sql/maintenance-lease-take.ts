import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `maintenanceLeaseTake`. */
export interface MaintenanceLeaseTakeParams {
  /** The chore, e.g. `retention`. */
  readonly name: string;
  /** This process. */
  readonly owner: string;
  readonly now: Date;
  /** The lease lasts until now + ttlMs unless renewed. */
  readonly ttlMs: number;
}

/**
 * Takes or renews the lease of a chore: succeeds when nobody holds it, this owner holds it, or
 * the holder's lease expired. One statement (an upsert that only overwrites an expired or own
 * row), so two processes racing for it cannot both win. Returns true when this owner holds it.
 */
export async function maintenanceLeaseTake(db: SqlExecutor, params: MaintenanceLeaseTakeParams): Promise<boolean> {
  const { rows } = await db.query<{ owner: string }>(
    `INSERT INTO maintenance_leases AS l (name, owner, expires_at)
     VALUES ($1, $2, $3::timestamptz + make_interval(secs => $4::double precision / 1000))
     ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
      WHERE l.owner = excluded.owner OR l.expires_at <= $3::timestamptz
     RETURNING owner`,
    [params.name, params.owner, params.now, params.ttlMs],
  );
  return rows.length === 1;
}
