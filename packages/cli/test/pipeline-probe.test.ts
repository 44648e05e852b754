import { TOPICS } from '@notify/contract';
import { dispatcherConfig, dispatcherTopicSuffixes } from '@notify/dispatcher';
import { ManualClock } from '@notify/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPipelineProbe, dispatcherLagGroups } from '../src/observability/pipeline-probe.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';

// The console's consumer lag and notify_kafka_consumer_lag_messages, through a real broker: each
// topic's lag is read with the offsets of the group that consumes it. requests.high has its own
// group (`<prefix>.dispatcher.high`); read with the normal lane's, it counted every message ever
// written to it and only grew.

let t: TestDatabase;
let kafka: TestKafka;
const retry = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 4000, jitter: 0, defaultTtlMs: 3_600_000 };

beforeAll(async () => {
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  await kafka.createTopics(dispatcherTopicSuffixes(retry), 1);
}, 60_000);

afterAll(async () => {
  await kafka?.close();
  await t?.close();
});

describe('consumer lag', () => {
  it('reads each topic with the offsets of the group that consumes it', async () => {
    const config = dispatcherConfig({ topicPrefix: kafka.prefix, retry, sendTimeoutMs: 1000, maxInFlight: 4, repairAfterMs: 60_000 });
    const groups = dispatcherLagGroups(config);
    expect(groups.map((g) => g.groupId)).toEqual([`${kafka.prefix}.dispatcher`, `${kafka.prefix}.dispatcher.high`]);
    const producer = kafka.kafka.producer();
    await producer.connect();
    const write = async (suffix: string, n: number) =>
      producer.send({ topic: kafka.topic(suffix), messages: Array.from({ length: n }, (_, i) => ({ key: `k${i}`, value: 'x' })) });
    try {
      await write(TOPICS.requests, 3);
      await write(TOPICS.requestsHigh, 2);
      await write(TOPICS.retry('2s'), 1);
      // Each lane consumed its own: the normal lane requests (3), the high lane requests.high (2).
      await kafka.admin.setOffsets({
        groupId: groups[0]!.groupId,
        topic: kafka.topic(TOPICS.requests),
        partitions: [{ partition: 0, offset: '3' }],
      });
      await kafka.admin.setOffsets({
        groupId: groups[1]!.groupId,
        topic: kafka.topic(TOPICS.requestsHigh),
        partitions: [{ partition: 0, offset: '2' }],
      });
      await write(TOPICS.requestsHigh, 1);
    } finally {
      await producer.disconnect();
    }
    const probe = createPipelineProbe({ db: t.db, clock: new ManualClock(new Date()), admin: async () => kafka.admin, groups });
    const lag = new Map((await probe.consumerLag()).map((l) => [l.topic, l.lag]));
    expect(lag.get(kafka.topic(TOPICS.requests))).toBe(0);
    expect(lag.get(kafka.topic(TOPICS.requestsHigh))).toBe(1); // with the normal lane's offsets: 3
    expect(lag.get(kafka.topic(TOPICS.retry('2s')))).toBe(1); // never committed: from the low watermark
    expect(lag.get(kafka.topic(TOPICS.events))).toBeUndefined();
  });
});

describe('while Kafka does not answer', () => {
  it('consumerLag fails within its timeout instead of hanging (the console page and /metrics read it)', async () => {
    const probe = createPipelineProbe({
      db: t.db,
      clock: new ManualClock(new Date()),
      admin: () => new Promise(() => {}),
      groups: [{ groupId: 'g', topics: ['t'] }],
      timeoutMs: 300,
    });
    const started = performance.now();
    await expect(probe.consumerLag()).rejects.toThrow('Kafka did not answer within 300 ms');
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});
