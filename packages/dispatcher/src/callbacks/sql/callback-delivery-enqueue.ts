import type { SqlExecutor } from '@notify/outbox';

/** One status event read from `<prefix>.events`. */
export interface CallbackEventRow {
  readonly tenantId: string;
  /** The webhook-id: a hash of the event's bytes. */
  readonly eventId: string;
  readonly notificationId: string;
  readonly type: string;
  /** The StatusEventV1 JSON as read. */
  readonly payload: string;
}

/** Parameters of `callbackDeliveryEnqueue`. */
export interface CallbackDeliveryEnqueueParams {
  readonly events: readonly CallbackEventRow[];
  readonly now: Date;
  /** A tenant with this many pending deliveries gets no more; the excess is counted in `callback_endpoints.dropped`. */
  readonly maxBacklog: number;
}

/** What `callbackDeliveryEnqueue` did. */
export interface CallbackDeliveryEnqueueResult {
  /** New pending deliveries. */
  readonly queued: number;
  /** Events a registered callback wanted but whose tenant's backlog was full. */
  readonly dropped: number;
}

/**
 * Queues a delivery, due now, for each event whose tenant has a callback endpoint that asked for
 * its type, in one statement. An event already queued (same tenant and event id: a re-read Kafka
 * message) is not queued again. A tenant whose pending backlog would pass `maxBacklog` has the
 * excess dropped and counted on its endpoint row instead (two consumers writing one tenant at the
 * same instant may pass the bound by one batch: it bounds the table, it is not an exact quota).
 */
export async function callbackDeliveryEnqueue(
  db: SqlExecutor,
  params: CallbackDeliveryEnqueueParams,
): Promise<CallbackDeliveryEnqueueResult> {
  if (params.events.length === 0) return { queued: 0, dropped: 0 };
  const col = <K extends keyof CallbackEventRow>(k: K) => params.events.map((e) => e[k]);
  const { rows } = await db.query<CallbackDeliveryEnqueueResult>(
    `WITH input AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY
                AS i(tenant_id, event_id, notification_id, event_type, payload, ord)),
     wanted AS (
       SELECT i.*, row_number() OVER (PARTITION BY i.tenant_id ORDER BY i.ord) AS n
         FROM input i JOIN callback_endpoints e ON e.tenant_id = i.tenant_id AND i.event_type = ANY (e.events)),
     backlog AS (
       SELECT t.tenant_id, (SELECT count(*) FROM callback_deliveries d WHERE d.tenant_id = t.tenant_id AND d.state = 'pending') AS pending
         FROM (SELECT DISTINCT tenant_id FROM wanted) t),
     judged AS (
       SELECT w.*, b.pending + w.n <= $7 AS fits FROM wanted w JOIN backlog b USING (tenant_id)),
     ins AS (
       INSERT INTO callback_deliveries (tenant_id, event_id, notification_id, event_type, payload, next_attempt_at, created_at, updated_at)
       SELECT tenant_id, event_id, notification_id, event_type, payload, $6, $6, $6 FROM judged WHERE fits ORDER BY ord
       ON CONFLICT (tenant_id, event_id) DO NOTHING
       RETURNING 1),
     drops AS (
       UPDATE callback_endpoints e SET dropped = e.dropped + d.n, last_dropped_at = $6
         FROM (SELECT tenant_id, count(*) AS n FROM judged WHERE NOT fits GROUP BY tenant_id) d
        WHERE e.tenant_id = d.tenant_id
       RETURNING d.n)
     SELECT (SELECT count(*) FROM ins)::int AS queued, (SELECT coalesce(sum(n), 0) FROM drops)::int AS dropped`,
    [col('tenantId'), col('eventId'), col('notificationId'), col('type'), col('payload'), params.now, params.maxBacklog],
  );
  return rows[0] ?? { queued: 0, dropped: 0 };
}
