/**
 * The permit rule through real Kafka: a delivery gives its in-flight permit back when its provider
 * call returns, and stays unfinished until its outcome is written. A stand-in handler's "provider
 * call" returns at once (`providerReturned`); the test holds each "outcome commit" open, then lets
 * it commit or lets the delivery die unwritten (a crash: `abandoned` leaves its offset open).
 * Checked: more deliveries run than there are permits while outcomes wait, never more than
 * `maxUnfinished`; one key's deliveries start in order; the committed offset stays at the lowest
 * unfinished message, and the next consumer of the group starts there.
 */
import { TOPICS } from '@notify/contract';
import { silentLogger, systemClock } from '@notify/runtime';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { createDeliveryConsumer, type DeliveryConsumer } from '../src/consumer.js';
import { createDispatcherEvents, dispatcherConfig, dispatcherTopicSuffixes, type MessageHandler, type RetryConfig } from '../src/index.js';

const retry: RetryConfig = { maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 2000, jitter: 0, defaultTtlMs: 3_600_000 };

let kafka: TestKafka | undefined;
const consumers: DeliveryConsumer[] = [];
afterEach(async () => {
  await Promise.all(consumers.splice(0).map((c) => c.stop(1_000).catch(() => undefined)));
  await kafka?.close();
  kafka = undefined;
});

/** One message's held outcome commit: `commit` finishes it, `crash` leaves it unwritten. */
interface Held {
  readonly settle: (how: 'commit' | 'crash') => void;
}

/** A handler whose provider call returns at once and whose outcome commit waits for the test. */
function heldOutcomes() {
  const started: string[] = [];
  const held = new Map<string, Held>();
  let maxUnfinishedSeen = 0;
  let consumer: DeliveryConsumer | undefined;
  const handler: MessageHandler = async (message, _signal, hooks) => {
    const id = message.value!.toString('utf8');
    started.push(id);
    maxUnfinishedSeen = Math.max(maxUnfinishedSeen, consumer?.inFlight ?? 0);
    hooks?.providerReturned?.();
    const how = await new Promise<'commit' | 'crash'>((settle) => held.set(id, { settle }));
    held.delete(id);
    return how === 'commit' ? { kind: 'skipped', notificationId: id, reason: 'terminal' } : { kind: 'abandoned', notificationId: id };
  };
  return {
    handler,
    started,
    held,
    attach: (c: DeliveryConsumer) => (consumer = c),
    get maxUnfinishedSeen() {
      return maxUnfinishedSeen;
    },
    settle(id: string, how: 'commit' | 'crash') {
      const h = held.get(id);
      if (!h) throw new Error(`${id} is not waiting for its outcome`);
      h.settle(how);
    },
  };
}

describe('permits go back when the provider call returns', () => {
  it('runs past maxInFlight while outcomes commit, up to maxUnfinished, keeps key order, and commits offsets only below the lowest unfinished message', async () => {
    const k = (kafka = await createTestKafka());
    await k.createTopics(dispatcherTopicSuffixes(retry), 1);
    const config = dispatcherConfig({
      topicPrefix: k.prefix,
      retry,
      sendTimeoutMs: 2_000,
      maxInFlight: 2,
      maxUnfinished: 4,
      repairAfterMs: 3_600_000,
    });
    // One partition: offsets 0–7 in this order. Key a has three messages, the rest one each.
    const messages = [
      ['a', 'm0'],
      ['b', 'm1'],
      ['a', 'm2'],
      ['c', 'm3'],
      ['a', 'm4'],
      ['d', 'm5'],
      ['e', 'm6'],
      ['f', 'm7'],
    ] as const;
    const producer = k.kafka.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({ topic: k.topic(TOPICS.requests), messages: messages.map(([key, value]) => ({ key, value })) });
    await producer.disconnect();

    const events = createDispatcherEvents(silentLogger);
    /** A consumer of the group whose handler holds every outcome commit (`heldOutcomes`), started. */
    const startHeld = async () => {
      const held = heldOutcomes();
      const consumer = createDeliveryConsumer(config, {
        kafka: k.kafka,
        handler: held.handler,
        clock: systemClock,
        logger: silentLogger,
        events,
      });
      held.attach(consumer);
      consumers.push(consumer);
      await consumer.start();
      return [held, consumer] as const;
    };
    const [first, a] = await startHeld();

    // Two permits, four running: each gave its permit back when its call returned.
    await waitFor(() => first.started.length === 4, { timeoutMs: 30_000, message: '4 deliveries started' });
    expect(first.started).toEqual(['m0', 'm1', 'm2', 'm3']); // a's m2 after m0's call returned
    expect(a.inFlight).toBe(4);
    expect(a.calling).toBe(0);

    // One outcome commits: one more starts, and the bound holds.
    first.settle('m1', 'commit');
    await waitFor(() => first.started.length === 5, { message: 'a fifth delivery' });
    expect(first.started[4]).toBe('m4');
    first.settle('m0', 'commit');
    first.settle('m3', 'commit');
    await waitFor(() => first.started.length === 7, { message: 'seven deliveries' });
    first.settle('m4', 'commit');
    first.settle('m5', 'commit');
    await waitFor(() => first.started.length === 8, { message: 'all eight started' });
    expect(first.maxUnfinishedSeen).toBeLessThanOrEqual(4);
    // Key a in order; every other message once.
    expect(first.started.filter((id) => ['m0', 'm2', 'm4'].includes(id))).toEqual(['m0', 'm2', 'm4']);
    expect([...first.started].sort()).toEqual(messages.map(([, v]) => v));

    // m2's outcome never commits (the process dies before): everything after it finished, yet
    // the group's offset stays at m2, and the next owner starts there.
    first.settle('m6', 'commit');
    first.settle('m7', 'commit');
    first.settle('m2', 'crash');
    await waitFor(() => first.held.size === 0 && a.inFlight === 0, { message: 'every delivery of the first consumer ended' });
    const report = await a.stop(5_000);
    consumers.splice(consumers.indexOf(a), 1);
    expect(report).toEqual({ notStarted: 0, abortedInFlight: false });
    const [committed] = await k.admin.fetchOffsets({ groupId: config.groupId, topics: [k.topic(TOPICS.requests)] });
    expect(committed?.partitions.find((p) => p.partition === 0)?.offset).toBe('2');

    const [second] = await startHeld();
    await waitFor(() => second.started.length === 4, { timeoutMs: 30_000, message: 'the next consumer re-reads from m2' });
    expect(second.started).toEqual(['m2', 'm3', 'm4', 'm5']);
    await waitFor(
      () => {
        for (const id of [...second.held.keys()]) second.settle(id, 'commit');
        return second.started.length === 6 && second.held.size === 0;
      },
      { message: 'the rest re-read and finished (each outcome committed as it waits)' },
    );
    expect(second.started).toEqual(['m2', 'm3', 'm4', 'm5', 'm6', 'm7']);
  });
});
