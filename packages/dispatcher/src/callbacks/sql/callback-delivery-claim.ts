import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `callbackDeliveryClaim`. */
export interface CallbackDeliveryClaimParams {
  readonly now: Date;
  /** A claimed row is due again after this (the sender crashed, or its outcome was never written): at-least-once. */
  readonly leaseMs: number;
  readonly limit: number;
  /** At most this many rows of one tenant per claim, so one tenant's backlog cannot take every sending slot. */
  readonly perTenant: number;
}

/** A claimed delivery, with its tenant's current callback URL (null: the endpoint was removed). */
export interface ClaimedCallbackDelivery {
  readonly id: string;
  readonly tenant_id: string;
  readonly event_id: string;
  readonly notification_id: string;
  readonly payload: string;
  /** Attempts made before this one. */
  readonly attempts: number;
  readonly url: string | null;
}

/**
 * Claims due pending deliveries, soonest first, at most `perTenant` per tenant, by moving their
 * `next_attempt_at` forward by `leaseMs` (another sender skips them meanwhile; locked rows are
 * skipped). Served by callback_deliveries_due_idx.
 */
export async function callbackDeliveryClaim(db: SqlExecutor, params: CallbackDeliveryClaimParams): Promise<ClaimedCallbackDelivery[]> {
  const { rows } = await db.query<ClaimedCallbackDelivery>(
    `WITH due AS (
       SELECT id, tenant_id, next_attempt_at FROM callback_deliveries
        WHERE state = 'pending' AND next_attempt_at <= $1
        ORDER BY next_attempt_at
        LIMIT $3 * 4
          FOR UPDATE SKIP LOCKED),
     fair AS (
       SELECT id FROM (SELECT id, next_attempt_at, row_number() OVER (PARTITION BY tenant_id ORDER BY next_attempt_at, id) AS r FROM due) x
        WHERE r <= $4 ORDER BY next_attempt_at LIMIT $3)
     UPDATE callback_deliveries d
        SET next_attempt_at = $1::timestamptz + make_interval(secs => $2::double precision / 1000), updated_at = $1
       FROM fair
      WHERE d.id = fair.id
     RETURNING d.id::text AS id, d.tenant_id, d.event_id, d.notification_id, d.payload, d.attempts,
               (SELECT e.url FROM callback_endpoints e WHERE e.tenant_id = d.tenant_id) AS url`,
    [params.now, params.leaseMs, params.limit, params.perTenant],
  );
  return rows;
}
