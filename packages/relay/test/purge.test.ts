import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type RelayEventMap, createRelay } from '../src/index.js';
import { insertMessages, outboxCounts, testMessage } from './support.js';

// Retention: every published row leaves the outbox; a published delivery request leaves a record
// in outbox_published (migration 0280), purged in bounded batches once older than retentionMs,
// with the rows a relay of an earlier version marked published in the outbox. Younger records and
// unpublished rows stay. Time is a ManualClock (published_at comes from it). With retention 0 no
// record is written.

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
      const stamped = await tdb.pool.query<{ at: Date }>('SELECT DISTINCT published_at AS at FROM outbox_published');
      expect(stamped.rows.map((r) => r.at.getTime())).toEqual([t0]);
      expect((await tdb.pool.query('SELECT 1 FROM outbox')).rowCount).toBe(0);
      // Ten rows as a relay of an earlier version left them: marked published in the outbox.
      await tdb.pool.query(
        `INSERT INTO outbox (topic, key, value, headers, published_at)
         SELECT 'retry.t1', 'tenant/email/legacy', 'legacy', '{}', $1 FROM generate_series(1, 10)`,
        [new Date(t0)],
      );

      // Half the retention later: a purge round runs and keeps everything.
      clock.advance(RETENTION_MS / 2);
      const seen = purges.length;
      await waitFor(() => purges.length >= seen + 2, { message: 'two purge rounds' });
      expect(purges.slice(seen).every((p) => p.count === 0)).toBe(true);
      expect((await outboxCounts(tdb.pool)).total).toBe(260);

      // New rows published at t0 + 30 s; then time passes the old rows' retention only.
      await insertMessages(
        tdb.pool,
        Array.from({ length: 30 }, (_, i) => testMessage('tenant/email/new', i)),
      );
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'new batch published' });
      clock.advance(RETENTION_MS / 2 + 1);
      await waitFor(() => purges.reduce((n, p) => n + p.count, 0) >= 260, { message: 'old rows purged' });
      expect(purges.reduce((n, p) => n + p.count, 0)).toBe(260);
      expect((await tdb.pool.query('SELECT 1 FROM outbox')).rowCount).toBe(0);
      const left = await tdb.pool.query<{ key: string; n: number }>('SELECT key, count(*)::int AS n FROM outbox_published GROUP BY key');
      expect(left.rows).toEqual([{ key: 'tenant/email/new', n: 30 }]);
    } finally {
      await relay.stop();
    }
  });

  it('deletes every published row and records the delivery requests; with retention 0, records nothing', async () => {
    for (const retentionMs of [RETENTION_MS, 0]) {
      await tdb.pool.query('TRUNCATE outbox, outbox_published');
      const relay = createRelay(
        { topicPrefix: tk.prefix, batchSize: 100, pollIntervalMs: 50, retentionMs, instanceId: `settle-${retentionMs}` },
        { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
      );
      await relay.start();
      try {
        // One batch with both kinds (the recording DELETE with the plain one), then one of events only.
        await insertMessages(tdb.pool, [
          { ...testMessage('tenant/email/a', 0), headers: { 'notification-id': 'ntf_a' } },
          testMessage('tenant/email/a', 1, 'events'),
          testMessage('tenant/email/b', 0, 'retry.t1'),
          testMessage('tenant/email/b', 1, 'events'),
        ]);
        await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'first batch published' });
        await insertMessages(tdb.pool, [testMessage('tenant/email/c', 0, 'events')]);
        await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { message: 'second batch published' });
        expect((await tdb.pool.query('SELECT 1 FROM outbox')).rowCount).toBe(0);
        const records = await tdb.pool.query<{ notification_id: string | null; topic: string; key: string }>(
          'SELECT notification_id, topic, key FROM outbox_published ORDER BY outbox_id',
        );
        expect(records.rows).toEqual(
          retentionMs > 0
            ? [
                { notification_id: 'ntf_a', topic: 'requests', key: 'tenant/email/a' },
                { notification_id: null, topic: 'retry.t1', key: 'tenant/email/b' },
              ]
            : [],
        );
      } finally {
        await relay.stop();
      }
    }
  });
});
