import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `endpointClaimProbe`. */
export interface EndpointClaimProbeParams {
  readonly id: string;
  readonly now: Date;
  /** The next probe may go this long after this one (the cool-down). */
  readonly cooldownMs: number;
}

/**
 * Claims the single probe of an open circuit: moves `probe_at` one cool-down ahead if it is due.
 * Exactly one caller across every dispatcher gets `{ claimed: true }` per cool-down; the others
 * get the new `probe_at` to wait for. Returns undefined when the endpoint is not open any more.
 */
export async function endpointClaimProbe(
  db: SqlExecutor,
  params: EndpointClaimProbeParams,
): Promise<{ readonly claimed: boolean; readonly probeAt: Date } | undefined> {
  const { rows } = await db.query<{ claimed: boolean; probe_at: Date }>(
    `WITH claim AS (
       UPDATE endpoints SET probe_at = $2::timestamptz + $3 * interval '1 millisecond', updated_at = $2
        WHERE id = $1 AND state = 'open' AND probe_at <= $2
       RETURNING probe_at
     )
     SELECT true AS claimed, probe_at FROM claim
     UNION ALL
     SELECT false, probe_at FROM endpoints WHERE id = $1 AND state = 'open' AND NOT EXISTS (SELECT 1 FROM claim)`,
    [params.id, params.now, params.cooldownMs],
  );
  const row = rows[0];
  return row ? { claimed: row.claimed, probeAt: new Date(row.probe_at) } : undefined;
}
