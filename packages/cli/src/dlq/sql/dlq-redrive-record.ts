import type { SqlExecutor } from '@notify/outbox';

/** One re-published dead letter. */
interface DlqRedriveRecord {
  readonly partition: number;
  readonly offset: bigint;
  readonly targetTopic: string;
  readonly notificationId: string | null;
}

/** Parameters of `dlqRedriveRecord`. */
export interface DlqRedriveRecordParams {
  readonly dlqTopic: string;
  readonly records: readonly DlqRedriveRecord[];
  readonly now: Date;
}

/** Records re-published dead letters in one statement; one already there (a `--force` run) counts up. */
export async function dlqRedriveRecord(db: SqlExecutor, p: DlqRedriveRecordParams): Promise<void> {
  if (p.records.length === 0) return;
  await db.query(
    `INSERT INTO dlq_redrives (dlq_topic, dlq_partition, dlq_offset, target_topic, notification_id, redriven_at)
     SELECT $1, r.part, r.pos, r.target_topic, r.notification_id, $6
       FROM unnest($2::int[], $3::bigint[], $4::text[], $5::text[]) AS r(part, pos, target_topic, notification_id)
     ON CONFLICT ON CONSTRAINT dlq_redrives_pkey DO UPDATE
        SET redrive_count = dlq_redrives.redrive_count + 1, redriven_at = EXCLUDED.redriven_at, target_topic = EXCLUDED.target_topic`,
    [
      p.dlqTopic,
      p.records.map((r) => r.partition),
      p.records.map((r) => r.offset.toString()),
      p.records.map((r) => r.targetTopic),
      p.records.map((r) => r.notificationId),
      p.now,
    ],
  );
}
