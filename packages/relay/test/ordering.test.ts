import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type Relay, type RelayConfig, createRelay } from '../src/index.js';
import { insertMessages, keyOrderViolations, outboxCounts, recordEvents, testMessage } from './support.js';

// The headline test of issue 3: three relays publish 10,000 rows of 50 keys, written by five
// concurrent writers while the relays start, stop and rebalance; every key must come out in order.
const KEYS = 50;
const ROWS = 10_000;
const WRITERS = 5;

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

describe('three relays, 10,000 rows, 50 keys', () => {
  it('publishes every row, and every key in order, across starts, stops and lease handovers', async () => {
    const config = (instanceId: string): RelayConfig => ({
      topicPrefix: tk.prefix,
      batchSize: 40, // small batches: many claims, so handovers happen mid-stream
      pollIntervalMs: 200,
      retentionMs: 3_600_000,
      instanceId,
      leaseTtlMs: 2_000,
      heartbeatIntervalMs: 100,
    });
    const make = (id: string) => createRelay(config(id), { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka });
    const all: Relay[] = [];
    const started = (r: Relay) => (all.push(r), r.start().then(() => r));

    const keyOf = (k: number) => `tenant-${k % 7}/email/key-${k}`;
    const perKey = new Map<string, number>();
    for (let k = 0; k < KEYS; k++) perKey.set(keyOf(k), 0);

    // Writers own disjoint keys, so each key's order is the order its writer committed.
    let written = 0;
    const writer = async (w: number) => {
      const mine = [...Array(KEYS).keys()].filter((k) => k % WRITERS === w);
      let rnd = w + 1;
      const next = () => (rnd = (rnd * 1103515245 + 12345) % 2 ** 31);
      while (written < ROWS) {
        const n = Math.min(1 + (next() % 20), ROWS - written);
        written += n;
        const msgs = Array.from({ length: n }, () => {
          const key = keyOf(mine[next() % mine.length]!);
          const seq = perKey.get(key)!;
          perKey.set(key, seq + 1);
          return testMessage(key, seq);
        });
        await insertMessages(tdb.pool, msgs);
      }
    };

    const r0 = await started(make('relay-a'));
    const errors = recordEvents(all, 'publishError');
    const writing = Promise.all([...Array(WRITERS).keys()].map(writer));

    await waitFor(async () => (await outboxCounts(tdb.pool)).total - (await outboxCounts(tdb.pool)).unpublished >= 1_500, {
      timeoutMs: 30_000,
      message: 'relay-a publishing',
    });
    // Alone, relay-a holds every slot; at the end three others split them (below): slots moved.
    await waitFor(() => r0.slots().length === 64, { timeoutMs: 10_000, message: 'relay-a holding all 64 slots' });
    const r1 = await started(make('relay-b'));
    const r2 = await started(make('relay-c'));
    for (const r of [r1, r2]) r.on('publishError', (payload) => void errors.push({ instanceId: r.instanceId, payload }));

    // Mid-stream, relay-a leaves politely and comes back as a new instance.
    await waitFor(() => r1.slots().length > 0 && r2.slots().length > 0, { timeoutMs: 10_000, message: 'b and c hold slots' });
    await r0.stop();
    const r3 = await started(make('relay-a2'));
    r3.on('publishError', (payload) => void errors.push({ instanceId: r3.instanceId, payload }));

    await writing;
    expect(written).toBe(ROWS);
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { timeoutMs: 60_000, message: 'all rows published' });
    expect(await outboxCounts(tdb.pool)).toEqual({ unpublished: 0, total: ROWS });

    // The three running relays split the 64 slots with no overlap.
    await waitFor(() => [r1, r2, r3].every((r) => r.slots().length >= 21), { timeoutMs: 10_000, message: 'balanced leases' });
    const owned = [r1, r2, r3].flatMap((r) => r.slots());
    expect(new Set(owned).size).toBe(owned.length);

    const messages = await tk.readAll('requests', ROWS, 60_000);
    await Promise.all([r1, r2, r3].map((r) => r.stop()));

    // Slots really moved between instances while rows were flowing: relay-a held all 64, and b, c and
    // a2 ended with at least 21 each (checked above). The lease events are not counted: an instance
    // can take its first slots inside start(), before a listener is attached (missed under load,
    // 2026-12-02: 1 event seen where 2 were expected).
    // Without failures nothing is re-sent: each key is exactly 0..n-1. A failed batch (broker hiccup)
    // is re-sent whole, so then the check is at-least-once with first occurrences in order.
    const violations = keyOrderViolations(messages, perKey, errors.length === 0);
    expect(violations).toEqual([]);
    expect(messages.length).toBeGreaterThanOrEqual(ROWS);
  });
});
