import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type RelayEventMap, createRelay } from '../src/index.js';
import { insertMessages, outboxCounts, testMessage } from './support.js';

// Retention: published rows older than retentionMs are purged in bounded batches; younger
// published rows and unpublished rows stay. Time is a ManualClock (published_at comes from it).
// Only delivery requests are kept: other rows are deleted when published, every row with retention 0.

const RETENTION_MS = 60_000;

let tdb: TestDatabase;
let tk: TestKafka;

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['requests', 'events', 'retry.t1'], 1);
});

afterAll(async () => {
  await tk?.close();
  await tdb?.close();
});

describe('retention purge', () => {
  it('deletes published rows older than the retention, and only those', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const t0 = clock.now().getTime();
    const relay = createRelay(
      {
        topicPrefix: tk.prefix,
        batchSize: 100,
        pollIntervalMs: 50,
        retentionMs: RETENTION_MS,
        instanceId: 'purger',
        purgeIntervalMs: 50,
        purgeBatchSize: 40,
        leaseTtlMs: 3_600_000, // the manual clock jumps; leases must outlive the jumps
        heartbeatIntervalMs: 100,
      },
      { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka, clock },
    );
    const purges: RelayEventMap['purged'][] = [];
    relay.on('purged', (e) => void purges.push(e));
    await relay.start();
    try {
      await insertMessages(
        tdb.pool,
        Array.from({ length: 250 }, (_, i) => testMessage('tenant/email/old', i)),
      );
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'old batch published' });
      const stamped = await tdb.pool.query<{ at: Date }>('SELECT DISTINCT published_at AS at FROM outbox');
      expect(stamped.rows.map((r) => r.at.getTime())).toEqual([t0]);

      // Half the retention later: a purge round runs and keeps everything.
      clock.advance(RETENTION_MS / 2);
      const seen = purges.length;
      await waitFor(() => purges.length >= seen + 2, { message: 'two purge rounds' });
      expect(purges.slice(seen).every((p) => p.count === 0)).toBe(true);
      expect((await outboxCounts(tdb.pool)).total).toBe(250);

      // New rows published at t0 + 30 s; then time passes the old rows' retention only.
      await insertMessages(
        tdb.pool,
        Array.from({ length: 30 }, (_, i) => testMessage('tenant/email/new', i)),
      );
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'new batch published' });
      clock.advance(RETENTION_MS / 2 + 1);
      await waitFor(() => purges.reduce((n, p) => n + p.count, 0) >= 250, { message: 'old rows purged' });
      expect(purges.reduce((n, p) => n + p.count, 0)).toBe(250);
      const left = await tdb.pool.query<{ key: string; n: number }>('SELECT key, count(*)::int AS n FROM outbox GROUP BY key');
      expect(left.rows).toEqual([{ key: 'tenant/email/new', n: 30 }]);
    } finally {
      await relay.stop();
    }
  });

  it('keeps published delivery requests and deletes other rows when they are published; with retention 0, every row', async () => {
    for (const retentionMs of [RETENTION_MS, 0]) {
      await tdb.pool.query('DELETE FROM outbox');
      const relay = createRelay(
        { topicPrefix: tk.prefix, batchSize: 100, pollIntervalMs: 50, retentionMs, instanceId: `settle-${retentionMs}` },
        { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
      );
      await relay.start();
      try {
        // One batch with both kinds (the UPDATE with its DELETE), then one of events only.
        await insertMessages(tdb.pool, [
          testMessage('tenant/email/a', 0),
          testMessage('tenant/email/a', 1, 'events'),
          testMessage('tenant/email/b', 0, 'retry.t1'),
          testMessage('tenant/email/b', 1, 'events'),
        ]);
        await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'first batch published' });
        await insertMessages(tdb.pool, [testMessage('tenant/email/c', 0, 'events')]);
        await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'second batch published' });
        const left = await tdb.pool.query<{ topic: string; published: boolean }>(
          'SELECT topic, published_at IS NOT NULL AS published FROM outbox ORDER BY id',
        );
        expect(left.rows).toEqual(
          retentionMs > 0
            ? [
                { topic: 'requests', published: true },
                { topic: 'retry.t1', published: true },
              ]
            : [],
        );
      } finally {
        await relay.stop();
      }
    }
  });
});
