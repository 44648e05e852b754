import { createServer } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { PublishError, type RelayEventMap, createKafkaPublisher, createRelay } from '../src/index.js';
import { createSwitchablePublisher } from '../src/testing/index.js';
import { insertMessages, keyOrderViolations, outboxCounts, testMessage } from './support.js';

// Kafka unreachable: the relay keeps the rows, reports each failure with a growing backoff, and
// drains by itself once publishing works again. The outbox keeps accepting rows meanwhile.

let tdb: TestDatabase;
let tk: TestKafka;

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['requests'], 3);
});

afterAll(async () => {
  await tk?.close();
  await tdb?.close();
});

/** A TCP port nothing listens on: bind an ephemeral port, then close it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

describe('Kafka unreachable', () => {
  it('keeps the rows, backs off exponentially, and drains once a working publisher is back', async () => {
    const deadKafka = new Kafka({
      clientId: 'relay-dead',
      brokers: [`127.0.0.1:${await closedPort()}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
      connectionTimeout: 500,
    });
    const broken = createKafkaPublisher(deadKafka, { retry: { retries: 1, initialRetryTime: 20, maxRetryTime: 50 } });
    const working = createKafkaPublisher(tk.kafka);
    const publisher = createSwitchablePublisher(broken);

    const perKey = new Map<string, number>();
    const keys = ['a', 'b', 'c', 'd'].map((k) => `tenant/webhook/${k}`);
    const rows = (from: number, to: number) =>
      keys.flatMap((key) => {
        perKey.set(key, to);
        return Array.from({ length: to - from }, (_, i) => testMessage(key, from + i));
      });
    await insertMessages(tdb.pool, rows(0, 30));

    const relay = createRelay(
      {
        topicPrefix: tk.prefix,
        batchSize: 50,
        pollIntervalMs: 100,
        retentionMs: 3_600_000,
        instanceId: 'kafka-down',
        backoff: { baseMs: 50, maxMs: 400, jitter: 0 },
      },
      { db: tdb.db, connectionString: tdb.url, publisher },
    );
    const errors: RelayEventMap['publishError'][] = [];
    relay.on('publishError', (e) => void errors.push(e));
    await relay.start();
    try {
      await waitFor(() => errors.length >= 5, { timeoutMs: 30_000, message: 'five failed attempts' });
      expect(errors.slice(0, 5).map((e) => [e.stage, e.attempt, e.retryInMs])).toEqual([
        ['publish', 1, 50],
        ['publish', 2, 100],
        ['publish', 3, 200],
        ['publish', 4, 400],
        ['publish', 5, 400],
      ]);
      expect(errors[0]!.error).toBeInstanceOf(PublishError);
      expect(await outboxCounts(tdb.pool)).toEqual({ unpublished: 120, total: 120 });

      // Enqueueing does not depend on Kafka.
      await insertMessages(tdb.pool, rows(30, 40));
      expect(await outboxCounts(tdb.pool)).toEqual({ unpublished: 160, total: 160 });

      publisher.target = working;
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { timeoutMs: 15_000, message: 'the backlog drained' });
    } finally {
      await relay.stop();
      await broken.close();
      await working.close();
    }
    const messages = await tk.readAll('requests', 160);
    expect(keyOrderViolations(messages, perKey, true)).toEqual([]);
  });
});
