import type { SqlExecutor } from '@notify/outbox';

/** A dead letter a previous `notify dlq redrive` re-published. */
export interface DlqRedriveRow {
  readonly dlq_partition: number;
  /** int8 as text (pg's default), exact beyond 2^53. */
  readonly dlq_offset: string;
  readonly redrive_count: number;
  readonly redriven_at: Date;
}

/** Parameters of `dlqRedriveSelect`. */
export interface DlqRedriveSelectParams {
  readonly dlqTopic: string;
  readonly partition: number;
  /** Both ends included. */
  readonly fromOffset: bigint;
  readonly toOffset: bigint;
}

/** The ledger rows of one DLQ partition's offset range (primary key range scan). */
export async function dlqRedriveSelect(db: SqlExecutor, p: DlqRedriveSelectParams): Promise<DlqRedriveRow[]> {
  const { rows } = await db.query<DlqRedriveRow>(
    `SELECT dlq_partition, dlq_offset, redrive_count, redriven_at
       FROM dlq_redrives
      WHERE dlq_topic = $1 AND dlq_partition = $2 AND dlq_offset BETWEEN $3 AND $4`,
    [p.dlqTopic, p.partition, p.fromOffset.toString(), p.toOffset.toString()],
  );
  return rows;
}
