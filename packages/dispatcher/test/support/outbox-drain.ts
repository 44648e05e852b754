import { TOPICS, topicName } from '@notify/contract';
import { type Database } from '@notify/migrations';
import { Partitioners, type Kafka } from 'kafkajs';
import { sql, type Kysely } from 'kysely';

/** A test-only stand-in for the relay: publishes unpublished outbox rows to Kafka every few ms. */
export interface OutboxDrain {
  /** Messages published so far (an enqueue's row is two: its request and the queued event it carries). */
  readonly published: number;
  stop(): Promise<void>;
}

interface Row {
  id: string;
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
  /** The queued event an enqueue's request row carries, published right after it (migration 0150). */
  event_value: string | null;
  event_headers: Record<string, string> | null;
}

/**
 * Starts draining. One instance per test file; rows go out in id order (good enough for tests
 * that write sequentially). The dispatcher's e2e test uses the real relay instead.
 */
export async function startOutboxDrain(db: Kysely<Database>, kafka: Kafka, topicPrefix: string, intervalMs = 20): Promise<OutboxDrain> {
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  await producer.connect();
  let published = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const once = async () => {
    await db.transaction().execute(async (trx) => {
      const { rows } =
        await sql<Row>`SELECT id, topic, key, value, headers, event_value, outbox_queued_event_headers(headers) AS event_headers
                         FROM outbox WHERE published_at IS NULL ORDER BY id LIMIT 500 FOR UPDATE SKIP LOCKED`.execute(trx);
      if (rows.length === 0) return;
      const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
      const add = (topic: string, key: string, value: string, headers: Record<string, string>) =>
        byTopic.set(topic, [...(byTopic.get(topic) ?? []), { key, value, headers }]);
      for (const r of rows) {
        add(r.topic, r.key, r.value, r.headers);
        if (r.event_value !== null) add(TOPICS.events, r.key, r.event_value, r.event_headers ?? {});
      }
      await producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic: topicName(topicPrefix, topic), messages })),
      });
      await sql`UPDATE outbox SET published_at = now() WHERE id = ANY(${rows.map((r) => r.id)}::bigint[])`.execute(trx);
      published += [...byTopic.values()].reduce((n, messages) => n + messages.length, 0);
    });
  };
  const loop = () => {
    running = once()
      .catch(() => undefined)
      .finally(() => {
        if (!stopped) timer = setTimeout(loop, intervalMs);
      });
  };
  loop();
  return {
    get published() {
      return published;
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await producer.disconnect();
    },
  };
}
