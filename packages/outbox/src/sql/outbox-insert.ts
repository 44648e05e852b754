import type { OutboxMessage } from '../contract/messages.js';
import type { SqlExecutor } from '../db/executor.js';

/** Parameters of `outboxInsert`. */
export interface OutboxInsertParams {
  readonly messages: readonly OutboxMessage[];
}

/**
 * Appends messages to the outbox in the caller's transaction, in order (ids ascend in the
 * order given). One statement whatever the count.
 */
export async function outboxInsert(db: SqlExecutor, params: OutboxInsertParams): Promise<void> {
  if (params.messages.length === 0) return;
  await db.query(
    `INSERT INTO outbox (topic, key, value, headers)
     SELECT m.topic, m.key, m.value, m.headers
       FROM unnest($1::text[], $2::text[], $3::text[], $4::jsonb[]) WITH ORDINALITY AS m(topic, key, value, headers, ord)
      ORDER BY m.ord`,
    [
      params.messages.map((m) => m.topic),
      params.messages.map((m) => m.key),
      params.messages.map((m) => m.value),
      params.messages.map((m) => JSON.stringify(m.headers)),
    ],
  );
}
