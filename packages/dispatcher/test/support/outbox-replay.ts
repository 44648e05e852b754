import { TOPICS, parseStatusEvent, topicName, type StatusEventV1 } from '@notify/contract';
import { type Database } from '@notify/migrations';
import { sql, type Kysely } from 'kysely';
import type { InboundMessage } from '../../src/index.js';

/**
 * Reads the outbox the way the relay would, without Kafka: each call returns the rows written
 * since the last call, as the messages the dispatcher would read (delivery requests) and the
 * status events. Test-only: the lab drives the production handler with it as time advances.
 */
export interface OutboxReplay {
  /** New delivery requests (`requests` and `retry.*`) since the last call, in outbox order. */
  takeRequests(): Promise<InboundMessage[]>;
  /** Every status event written so far, in outbox order. */
  events(): Promise<StatusEventV1[]>;
}

interface Row {
  id: string;
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}

export function createOutboxReplay(db: Kysely<Database>, topicPrefix: string): OutboxReplay {
  let lastId = 0n;
  return {
    async takeRequests() {
      const { rows } =
        await sql<Row>`SELECT id, topic, key, value, headers FROM outbox WHERE id > ${lastId.toString()}::bigint ORDER BY id`.execute(db);
      const last = rows.at(-1);
      if (last) lastId = BigInt(last.id);
      return rows
        .filter((r) => r.topic === TOPICS.requests || r.topic === TOPICS.requestsHigh || r.topic.startsWith('retry.'))
        .map((r) => ({
          topic: topicName(topicPrefix, r.topic),
          partition: 0,
          offset: r.id,
          key: Buffer.from(r.key),
          value: Buffer.from(r.value),
          headers: r.headers,
        }));
    },
    async events() {
      // outbox_messages: the queued events that ride on request rows too (migration 0150)
      const { rows } =
        await sql<Row>`SELECT id, topic, key, value, headers FROM outbox_messages WHERE topic = ${TOPICS.events} ORDER BY id, part`.execute(
          db,
        );
      return rows.map((r) => {
        const parsed = parseStatusEvent(r.value);
        if (!parsed.ok) throw new Error(`bad status event in outbox row ${r.id}: ${parsed.reason}`);
        return parsed.message;
      });
    },
  };
}
