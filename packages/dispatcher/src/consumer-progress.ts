import { type Admin, type Kafka, Partitioners } from 'kafkajs';
import { topicName } from '@notify/contract';
import type { DispatcherConfig } from './config.js';
import { deliveryLanes } from './consumer.js';

/** A delivery request the relay published: where it went and when the relay marked it published. */
export interface PublishedRequest {
  /** Topic suffix (`requests`, `retry.5s`, …). */
  readonly topic: string;
  readonly key: string;
  readonly publishedAt: Date;
}

/**
 * Whether the dispatcher's consumer group has read past a published request. The repair sweep
 * asks before re-publishing, so a message that is only waiting behind consumer lag is left alone.
 */
export interface ConsumerProgress {
  /** One answer per request, in order: true when the group consuming its topic committed past it. */
  consumedPast(requests: readonly PublishedRequest[]): Promise<boolean[]>;
  close(): Promise<void>;
}

/** Distinct publish instants looked up per pass; requests beyond it count as not consumed yet (asked again next pass). */
const MAX_LOOKUPS = 50;

/**
 * `ConsumerProgress` from Kafka's own records, without storing offsets in PostgreSQL:
 * - the request's partition is its key's murmur2 hash (the relay's partitioner) modulo the
 *   topic's partition count;
 * - `fetchTopicOffsetsByTimestamp(publishedAt)` gives the first offset written at or after the
 *   relay marked the row published. The record's timestamp (set by the relay's producer) is not
 *   later than that instant, so the request sits below this offset;
 * - the group's committed offset on that partition at or beyond it means the group has read
 *   past the request. Below it, the request may still be waiting: lag, not loss.
 * It can err only towards re-publishing (skewed producer clocks), which the handler's guard makes harmless.
 */
export function createKafkaConsumerProgress(kafka: Kafka, config: DispatcherConfig): ConsumerProgress {
  const groupOf = new Map<string, string>();
  for (const lane of deliveryLanes(config)) for (const t of lane.topics) groupOf.set(t, lane.groupId);
  const partitioner = Partitioners.DefaultPartitioner();
  let admin: Promise<Admin> | undefined;
  const connect = () =>
    (admin ??= (async () => {
      const a = kafka.admin();
      await a.connect();
      return a;
    })().catch((err: unknown) => {
      admin = undefined;
      throw err;
    }));

  return {
    async consumedPast(requests) {
      if (requests.length === 0) return [];
      const a = await connect();
      const topics = [...new Set(requests.map((r) => r.topic))];
      const partitionCount = new Map<string, number>();
      const committed = new Map<string, Map<number, bigint>>();
      const { topics: meta } = await a.fetchTopicMetadata({ topics: topics.map((t) => topicName(config.topicPrefix, t)) });
      for (const t of topics) {
        const full = topicName(config.topicPrefix, t);
        partitionCount.set(t, meta.find((m) => m.name === full)?.partitions.length ?? 0);
        const groupId = groupOf.get(t) ?? config.groupId;
        const [offsets] = await a.fetchOffsets({ groupId, topics: [full] });
        committed.set(t, new Map((offsets?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)])));
      }
      const lookups = new Map<string, Promise<Map<number, bigint>>>();
      return Promise.all(
        requests.map(async (r) => {
          const n = partitionCount.get(r.topic) ?? 0;
          if (n === 0) return false;
          const partition = partitioner({
            topic: topicName(config.topicPrefix, r.topic),
            partitionMetadata: Array.from({ length: n }, (_, i) => ({
              partitionId: i,
              leader: 0,
              replicas: [0],
              isr: [0],
              partitionErrorCode: 0,
            })),
            message: { key: r.key, value: null },
          });
          const lookupKey = `${r.topic}@${r.publishedAt.getTime()}`;
          let lookup = lookups.get(lookupKey);
          if (!lookup) {
            if (lookups.size >= MAX_LOOKUPS) return false;
            lookup = a
              .fetchTopicOffsetsByTimestamp(topicName(config.topicPrefix, r.topic), r.publishedAt.getTime())
              .then((list) => new Map(list.map((p) => [p.partition, BigInt(p.offset)])));
            lookups.set(lookupKey, lookup);
          }
          const after = (await lookup).get(partition);
          const done = committed.get(r.topic)?.get(partition);
          return after !== undefined && done !== undefined && done >= 0n && done >= after;
        }),
      );
    },
    async close() {
      const a = admin;
      admin = undefined;
      if (a) await (await a.catch(() => undefined))?.disconnect();
    },
  };
}
