import type { SqlExecutor } from '@notify/outbox';

/** Attempts of one minute with one outcome. */
export interface DeliveryRateRow {
  readonly minute: Date;
  readonly outcome: string;
  /** 'sent' or 'dead' when this was the notification's last attempt and it ended so; else null. */
  readonly final_state: string | null;
  readonly count: number;
}

/**
 * The tenant's delivery attempts per minute and outcome in [from, to), marking the attempts that
 * ended their notification sent or dead (the dead rate), for the console's pipeline charts: a range of attempts_finished_at_idx (migration 0031), each joined to its notification
 * (primary key) for the tenant.
 */
export async function deliveryRate(
  db: SqlExecutor,
  params: { readonly tenantId: string; readonly from: Date; readonly to: Date },
): Promise<DeliveryRateRow[]> {
  const { rows } = await db.query<DeliveryRateRow>(
    `SELECT date_trunc('minute', a.finished_at) AS minute, a.outcome,
            CASE WHEN a.attempt = n.attempts AND n.state IN ('sent', 'dead') THEN n.state END AS final_state,
            count(*)::int AS count
       FROM attempts a
       JOIN notifications n ON n.id = a.notification_id
      WHERE a.finished_at >= $2 AND a.finished_at < $3 AND n.tenant_id = $1
      GROUP BY 1, 2, 3
      ORDER BY 1`,
    [params.tenantId, params.from, params.to],
  );
  return rows;
}
