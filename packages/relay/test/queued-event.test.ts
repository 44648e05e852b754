import { describe, expect, it } from 'vitest';
import { enqueue, fromKysely } from '@notify/outbox';
import { createTestDatabase } from '../../../test/support/db.js';
import { createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { createRelay } from '../src/index.js';
import { outboxCounts } from './support.js';

// The relay derives the queued event's headers from its request row's (queuedEventHeaders) instead
// of asking PostgreSQL's outbox_queued_event_headers for every row. The published events must be
// what the outbox_messages view (that SQL function) says, header for header and in the same order.

describe('the queued event a request row carries', () => {
  it('goes out with the headers of the outbox_messages view, in its key order', async () => {
    const tdb = await createTestDatabase();
    const tk = await createTestKafka();
    const relay = createRelay(
      { topicPrefix: tk.prefix, batchSize: 50, pollIntervalMs: 100, retentionMs: 3_600_000 },
      { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
    );
    try {
      await tk.createTopics(['requests', 'requests.high', 'events'], 1);
      const intents = [
        { tenant_id: 'acme', channel: 'webhook', to: 'https://hooks.example.com/a', body: 'a' },
        {
          tenant_id: 'acme',
          channel: 'email',
          to: 'ada@example.com',
          subject: 's',
          body: 'b',
          traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        },
        { tenant_id: 'другой', channel: 'sms', to: '+15555550100', body: 'c', priority: 'high' },
      ] as const;
      for (const intent of intents) {
        await tdb.db.transaction().execute((trx) => enqueue(fromKysely(trx), intent, { maxAttempts: 3, defaultTtlMs: 3_600_000 }));
      }
      const { rows: expected } = await tdb.pool.query<{ value: string; headers: Record<string, string> }>(
        `SELECT value, headers FROM outbox_messages WHERE part = 1 ORDER BY txid, id`,
      );
      expect(expected).toHaveLength(3);

      await relay.start();
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
        timeoutMs: 30_000,
        message: 'every outbox row published',
      });

      const events = await tk.readAll('events', 3);
      const published = events.map((m) => ({
        value: m.value!.toString('utf8'),
        headers: Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(v)]),
      }));
      const byValue = (a: { value: string }, b: { value: string }) => a.value.localeCompare(b.value);
      expect(published.sort(byValue)).toEqual(expected.map((e) => ({ value: e.value, headers: Object.entries(e.headers) })).sort(byValue));
    } finally {
      await relay.stop();
      await tk.close();
      await tdb.close();
    }
  });
});
