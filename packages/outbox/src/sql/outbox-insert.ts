import type { SqlExecutor } from '../db/executor.js';

/**
 * A message as the outbox stores it and the relay publishes it: a topic suffix (the relay adds
 * the prefix), the Kafka key, the exact value bytes (JSON text) and the headers. `@notify/contract`'s
 * builders produce this shape (`ContractMessage`).
 */
export interface OutboxMessage {
  readonly topic: string;
  readonly key: string;
  readonly value: string;
  readonly headers: Readonly<Record<string, string>>;
}

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
