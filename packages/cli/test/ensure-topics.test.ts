/**
 * `ensureTopics` on the shared broker: when it returns, the topics it created serve requests on
 * every partition. Before, it returned once the metadata named a leader, which KRaft publishes
 * before the leader serves the partition; `notify start` on fresh topics then saw its first sends
 * refused ("This server is not the leader for that topic-partition") and its consumer groups
 * re-join about twenty times in the first half second.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';

let k: TestKafka;
beforeAll(async () => {
  k = await createTestKafka();
});
afterAll(async () => {
  await k?.close();
});

describe('ensureTopics', () => {
  it('returns when every partition of the topics it created takes a produce request, with no retry', async () => {
    const suffixes = ['fresh.a', 'fresh.b', 'fresh.c', 'fresh.d'];
    const partitions = 12;
    await k.createTopics(suffixes, partitions);
    // No retries: a NOT_LEADER_FOR_PARTITION on any partition fails the send.
    const producer = k.kafka.producer({ retry: { retries: 0 }, allowAutoTopicCreation: false });
    await producer.connect();
    try {
      const results = await producer.sendBatch({
        acks: -1,
        topicMessages: suffixes.map((s) => ({
          topic: k.topic(s),
          messages: Array.from({ length: partitions }, (_, partition) => ({ partition, value: `m${partition}` })),
        })),
      });
      expect(results.filter((r) => r.errorCode === 0)).toHaveLength(suffixes.length * partitions);
    } finally {
      await producer.disconnect();
    }
    const offsets = await k.admin.fetchTopicOffsets(k.topic('fresh.a'));
    expect(offsets.map((o) => o.high).sort()).toEqual(Array.from({ length: partitions }, () => '1'));
  });
});
