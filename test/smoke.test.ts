import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from './support/db.js';
import { createTestKafka, type TestKafka } from './support/kafka.js';

// Proves the stack the other tests stand on: a migrated PostgreSQL database and a real Kafka
// broker that keeps a keyed message on one partition.
let t: TestDatabase;
let k: TestKafka;
beforeAll(async () => {
  [t, k] = await Promise.all([createTestDatabase(), createTestKafka()]);
});
afterAll(async () => {
  await Promise.all([t?.close(), k?.close()]);
});

describe('smoke', () => {
  it('has the migrated schema', async () => {
    const tables = await sql<{ table_name: string }>`
      SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`.execute(t.db);
    expect(tables.rows.map((r) => r.table_name)).toEqual(
      expect.arrayContaining(['attempts', 'kysely_migration', 'notifications', 'outbox']),
    );
  });

  it('produces and consumes keyed messages through kafkajs, in order per key', async () => {
    await k.createTopics(['smoke'], 3);
    const producer = k.kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await producer.connect();
    try {
      await producer.send({
        topic: k.topic('smoke'),
        acks: -1,
        messages: Array.from({ length: 20 }, (_, i) => ({ key: `key-${i % 2}`, value: String(i), headers: { n: String(i) } })),
      });
    } finally {
      await producer.disconnect();
    }
    const messages = await k.readAll('smoke', 20);
    for (const key of ['key-0', 'key-1']) {
      const values = messages.filter((m) => m.key?.toString() === key).map((m) => Number(m.value?.toString()));
      expect(values).toEqual([...values].sort((a, b) => a - b));
      expect(values).toHaveLength(10);
    }
    expect(messages[0]!.headers?.n).toBeDefined();
  });
});
