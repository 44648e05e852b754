import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type RelayEventMap, createRelay } from '../src/index.js';
import { insertMessages, outboxCounts, testMessage } from './support.js';

// LISTEN/NOTIFY: with a 60 s poll interval, a committed row is published within seconds, also
// after the LISTEN connection was killed; and an idle relay does (next to) nothing.

const POLL_MS = 60_000;
const DEADLINE_MS = 10_000; // well under the poll interval: only a notification can explain it

let tdb: TestDatabase;
let tk: TestKafka;

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['requests'], 1);
});

afterAll(async () => {
  await tk?.close();
  await tdb?.close();
});

describe('wake-up on NOTIFY', () => {
  it('publishes a new row long before the poll interval, and again after the LISTEN connection is killed', async () => {
    const relay = createRelay(
      { topicPrefix: tk.prefix, batchSize: 100, pollIntervalMs: POLL_MS, retentionMs: 3_600_000, instanceId: 'wakeup' },
      { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
    );
    const claims: RelayEventMap['claimed'][] = [];
    const connected: RelayEventMap['wakeupConnected'][] = [];
    const trace: string[] = []; // for the failure message
    const t0 = Date.now();
    relay.on('claimed', (e) => void (claims.push(e), trace.push(`${Date.now() - t0}ms claimed ${e.count} heldBack=${e.heldBack}`)));
    relay.on('wakeupConnected', (e) => void (connected.push(e), trace.push(`${Date.now() - t0}ms connected reconnect=${e.reconnect}`)));
    relay.on('published', (e) => void trace.push(`${Date.now() - t0}ms published ${e.count} in ${Math.round(e.durationMs)}ms`));
    relay.on('publishError', (e) => void trace.push(`${Date.now() - t0}ms publishError ${e.stage} ${String(e.error)}`));
    relay.on('error', (e) => void trace.push(`${Date.now() - t0}ms error ${e.stage} ${String(e.error)}`));
    const explain = async (err: unknown) => {
      const { rows } = await tdb.pool.query(
        `SELECT txid::text, published_at, pg_current_snapshot()::text AS snapshot FROM outbox ORDER BY id`,
      );
      return new Error(`${(err as Error).message}\nrows: ${JSON.stringify(rows)}\n${trace.join('\n')}`);
    };
    await relay.start();
    try {
      await waitFor(() => claims.length >= 1 && connected.length === 1, { message: 'the first (empty) claim' });
      const idleClaims = claims.length;

      await insertMessages(tdb.pool, [testMessage('tenant/email/w', 0)]);
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
        timeoutMs: DEADLINE_MS,
        message: 'row 0 published on NOTIFY',
      });

      // Kill the LISTEN session; the relay reconnects by itself and keeps waking on NOTIFY.
      const killed = await tdb.pool.query<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = 'notify-relay-wakeup' AND datname = current_database()`,
      );
      expect(killed.rows.map((r) => r.ok)).toEqual([true]);
      await waitFor(() => connected.some((c) => c.reconnect), { timeoutMs: DEADLINE_MS, message: 'LISTEN reconnected' });
      trace.push(`${Date.now() - t0}ms inserting row 1`);
      await insertMessages(tdb.pool, [testMessage('tenant/email/w', 1)]);
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0 && (await outboxCounts(tdb.pool)).total === 2, {
        timeoutMs: DEADLINE_MS,
        message: 'row 1 published on NOTIFY after the reconnect',
      }).catch(async (err: unknown) => {
        throw await explain(err);
      });

      // Idle cost: only the two notifications, the reconnect and the rows' own rounds woke it;
      // no polling happened in between (a 50 ms poll would have made dozens of rounds by now).
      // A round that found rows held back by an older open transaction (another test's, on a
      // busy server) is re-polled on a short backoff by design: those re-polls are not counted.
      const woken = claims.filter((_, i) => i >= idleClaims && !claims[i - 1]?.heldBack);
      expect(woken.length, trace.join('\n')).toBeLessThanOrEqual(8);
    } finally {
      await relay.stop();
    }
    const messages = await tk.readAll('requests', 2);
    expect(messages).toHaveLength(2);
  });
});
