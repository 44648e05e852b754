/**
 * Poison messages through real Kafka: each lands on `<prefix>.dlq` with its reason and source,
 * and the good notifications around them are still delivered by the same consumer.
 */
import { HEADERS, TOPICS } from '@notify/contract';
import { Partitioners } from 'kafkajs';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { headersToStrings } from '../src/index.js';
import { countByState, startHarness, type Harness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { startReceiver, type Receiver } from './support/receiver.js';

let h: Harness | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

describe('poison messages', () => {
  it('go to the dead-letter topic with a reason while good ones still deliver', async () => {
    h = await startHarness({ partitions: 1 });
    receiver = await startReceiver(() => ({ status: 200 }));
    const due = new Date().toISOString();
    const unknown = {
      v: 1,
      type: 'notification.deliver',
      id: 'ntf_01KZZZZZZZZZZZZZZZZZZZZZZZ',
      tenant_id: 't1',
      channel: 'webhook',
      attempt: 1,
      due_at: due,
    };
    const poison = [
      { key: 'p1', value: Buffer.from('{not json') },
      { key: 'p2', value: Buffer.from(JSON.stringify({ ...unknown, v: 2 })) },
      { key: 'p3', value: Buffer.from(JSON.stringify(unknown)) },
      { key: 'p4', value: Buffer.from([0xff, 0xfe, 0x00, 0x7b]) },
      { key: 'p5', value: null },
    ];
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/good/0`, body: 'before' });
    const producer = h.kafka.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    try {
      await producer.send({ topic: h.kafka.topic(TOPICS.requests), messages: poison.map((p) => ({ ...p, headers: { origin: 'test' } })) });
    } finally {
      await producer.disconnect();
    }
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/good/1`, body: 'after' });

    const letters = await h.kafka.readAll(TOPICS.dlq, 5, 20_000);
    const byKey = new Map(letters.map((m) => [m.key?.toString(), { value: m.value, headers: headersToStrings(m.headers) }]));
    expect(byKey.get('p1')?.headers[HEADERS.dlqReason]).toBe('value is not valid JSON');
    expect(byKey.get('p2')?.headers[HEADERS.dlqReason]).toBe('unknown schema version 2');
    expect(byKey.get('p3')?.headers[HEADERS.dlqReason]).toBe(`unknown notification ${unknown.id}`);
    expect(byKey.get('p4')?.headers[HEADERS.dlqReason]).toBe('value is not valid JSON');
    expect(byKey.get('p5')?.headers[HEADERS.dlqReason]).toBe('empty message (tombstone)');
    for (const [, letter] of byKey) {
      expect(letter.headers[HEADERS.dlqSourceTopic]).toBe(h.kafka.topic(TOPICS.requests));
      expect(letter.headers[HEADERS.dlqSourcePartition]).toBe('0');
      expect(Number(letter.headers[HEADERS.dlqSourceOffset])).toBeGreaterThanOrEqual(0);
      expect(letter.headers.origin).toBe('test');
    }
    // The original bytes, exactly, even when they are not text.
    expect(byKey.get('p4')?.value).toEqual(Buffer.from([0xff, 0xfe, 0x00, 0x7b]));
    expect(byKey.get('p5')?.value).toBeNull();

    await waitFor(async () => (await countByState(h as Harness)).sent === 2, {
      timeoutMs: 15_000,
      message: 'both good notifications sent',
    });
    expect(h.seen.deadLettered.map((e) => e.code).sort()).toEqual([
      'bad_json',
      'bad_json',
      'empty',
      'unknown_notification',
      'unknown_version',
    ]);
    expect(h.seen.consumerError.filter((e) => e.phase !== 'commit')).toHaveLength(0);
  });

  it('a request due further ahead than any the dispatcher writes is dead-lettered instead of holding its partition', async () => {
    h = await startHarness({ partitions: 1 });
    receiver = await startReceiver(() => ({ status: 200 }));
    const firstId = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/good/0`, body: 'before' });
    const request = (dueAt: string) =>
      Buffer.from(
        JSON.stringify({
          v: 1,
          type: 'notification.deliver',
          id: firstId,
          tenant_id: 't1',
          channel: 'webhook',
          attempt: 1,
          due_at: dueAt,
        }),
      );
    // The harness' top tier is 2 s: one day ahead is out of range on it too.
    const top = TOPICS.retry('2s');
    const producer = h.kafka.kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    await producer.connect();
    try {
      await producer.send({
        topic: h.kafka.topic(TOPICS.requests),
        messages: [{ key: 'far', value: request('2099-01-01T00:00:00.000Z') }],
      });
      await producer.send({
        topic: h.kafka.topic(top),
        messages: [{ key: 'day', value: request(new Date(Date.now() + 86_400_000).toISOString()) }],
      });
    } finally {
      await producer.disconnect();
    }
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    // Behind the far one on the request topic's only partition.
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/good/1`, body: 'after' });

    await waitFor(async () => (await countByState(h as Harness)).sent === 2, {
      timeoutMs: 15_000,
      message: 'both good notifications sent',
    });
    const letters = await h.kafka.readAll(TOPICS.dlq, 2, 20_000);
    const byKey = new Map(letters.map((m) => [m.key?.toString(), headersToStrings(m.headers)]));
    expect(byKey.get('far')?.[HEADERS.dlqReason]).toBe(
      `due_at 2099-01-01T00:00:00.000Z is further ahead than any delivery request on ${h.kafka.topic(TOPICS.requests)} is written`,
    );
    expect(byKey.get('day')?.[HEADERS.dlqSourceTopic]).toBe(h.kafka.topic(top));
    expect(h.seen.deadLettered.map((e) => e.code)).toEqual(['due_out_of_range', 'due_out_of_range']);
  });
});
