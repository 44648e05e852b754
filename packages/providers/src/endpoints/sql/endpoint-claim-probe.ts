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
 *
 * Two statements, not one: a loser's UPDATE waits for the winner's row lock and then finds the
 * claim taken, but a SELECT in the same statement would read that statement's snapshot, taken
 * before the winner committed, and return the old `probe_at`. The second statement's snapshot sees
 * the winner's commit. Only a caller that did not claim runs it.
 */
export async function endpointClaimProbe(
  db: SqlExecutor,
  params: EndpointClaimProbeParams,
): Promise<{ readonly claimed: boolean; readonly probeAt: Date } | undefined> {
  const claim = await db.query<{ probe_at: Date }>(
    `UPDATE endpoints SET probe_at = $2::timestamptz + $3 * interval '1 millisecond', updated_at = $2
      WHERE id = $1 AND state = 'open' AND probe_at <= $2
     RETURNING probe_at`,
    [params.id, params.now, params.cooldownMs],
  );
  const claimed = claim.rows[0];
  if (claimed) return { claimed: true, probeAt: new Date(claimed.probe_at) };
  const open = await db.query<{ probe_at: Date }>(`SELECT probe_at FROM endpoints WHERE id = $1 AND state = 'open'`, [params.id]);
  const row = open.rows[0];
  return row ? { claimed: false, probeAt: new Date(row.probe_at) } : undefined;
}
