import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `outboxRefusedInsert`. */
export interface OutboxRefusedInsertParams {
  readonly rows: readonly {
    readonly id: string;
    readonly topic: string;
    readonly key: string;
    readonly value: string;
    readonly headers: Readonly<Record<string, string>>;
    readonly notificationId: string | undefined;
    readonly reason: string;
  }[];
  readonly now: Date;
}

/**
 * Copies outbox rows Kafka refused for good into `outbox_refused` (migration 0021), in the claim
 * transaction that then marks them published, so their key slot moves on. A row already set
 * aside (a replayed batch) is left as it is.
 */
export async function outboxRefusedInsert(db: SqlExecutor, params: OutboxRefusedInsertParams): Promise<void> {
  if (params.rows.length === 0) return;
  const r = params.rows;
  await db.query(
    `INSERT INTO outbox_refused (outbox_id, topic, key, value, headers, notification_id, reason, refused_at)
     SELECT m.id, m.topic, m.key, m.value, m.headers, m.notification_id, m.reason, $8
       FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::jsonb[], $6::text[], $7::text[])
            AS m(id, topic, key, value, headers, notification_id, reason)
     ON CONFLICT (outbox_id) DO NOTHING`,
    [
      r.map((x) => x.id),
      r.map((x) => x.topic),
      r.map((x) => x.key),
      r.map((x) => x.value),
      r.map((x) => JSON.stringify(x.headers)),
      r.map((x) => x.notificationId ?? null),
      r.map((x) => x.reason),
      params.now,
    ],
  );
}
