import type { ICustomPartitioner, Kafka, Message, PartitionMetadata, RecordMetadata, TopicMessages } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { createKafkaPublisher } from './kafka-publisher.js';
import { PublishError } from './publisher.js';

// What kafkajs 2.2.4's sendBatch does with the partitioner and the answers, reduced to the step
// that lost messages (kafkajs#1798): it routes every message with the producer's partitioner, then
// resolves with the acknowledgements it has, which after a retry across a leader change can leave
// out partitions it never wrote to. The real broker case is the chaos scenario "a rolling restart
// of all three brokers" (test/chaos/cluster.test.ts).
const PARTITIONS: PartitionMetadata[] = [0, 1, 2, 3].map((partitionId) => ({
  partitionId,
  leader: partitionId % 2,
  replicas: [0, 1],
  isr: [0, 1],
  partitionErrorCode: 0,
}));

function fakeKafka(answer: (routed: { topic: string; partition: number }[]) => RecordMetadata[]) {
  const producers: { disconnected: boolean }[] = [];
  const kafka = {
    producer({ createPartitioner }: { createPartitioner: ICustomPartitioner }) {
      const partition = createPartitioner();
      const state = { disconnected: false };
      producers.push(state);
      return {
        connect: async () => {},
        disconnect: async () => {
          state.disconnected = true;
        },
        sendBatch: async ({ topicMessages }: { topicMessages: TopicMessages[] }) => {
          const routed = topicMessages.flatMap(({ topic, messages }) =>
            messages.map((message: Message) => ({ topic, partition: partition({ topic, partitionMetadata: PARTITIONS, message }) })),
          );
          return answer(routed);
        },
      };
    },
  } as unknown as Kafka;
  return { kafka, producers };
}

const ack = (topicName: string, partition: number): RecordMetadata => ({ topicName, partition, errorCode: 0, baseOffset: '0' });

const messages = Array.from({ length: 40 }, (_, i) => ({ topic: 'p.requests', key: `user-${i}`, value: '{}', headers: {} }));

describe('kafka publisher', () => {
  it('resolves when every partition it wrote to is acknowledged', async () => {
    const { kafka } = fakeKafka((routed) =>
      [...new Map(routed.map((r) => [`${r.topic}|${r.partition}`, r])).values()].map((r) => ack(r.topic, r.partition)),
    );
    await expect(createKafkaPublisher(kafka).publish(messages)).resolves.toBeUndefined();
  });

  it('fails the publish, retriable, when sendBatch resolves without an acknowledgement for a partition it wrote to, and drops the producer', async () => {
    // Only the partitions led by broker 0 answered: the others' messages were never sent.
    const { kafka, producers } = fakeKafka((routed) =>
      [...new Set(routed.filter((r) => r.partition % 2 === 0).map((r) => r.partition))].map((p) => ack('p.requests', p)),
    );
    const publisher = createKafkaPublisher(kafka);
    const err = await publisher.publish(messages).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PublishError);
    expect((err as PublishError).retriable).toBe(true);
    expect((err as PublishError).message).toMatch(
      /acknowledged no write to p\.requests\[1\], p\.requests\[3\]|p\.requests\[3\], p\.requests\[1\]/,
    );
    expect(producers[0]!.disconnected).toBe(true); // the next publish gets a new producer id
  });
});
