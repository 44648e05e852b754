import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fromPgClient, outboxInsert } from '@notify/outbox';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type Publisher, type Relay, type RelayEventMap, createKafkaPublisher, createRelay } from '../src/index.js';
import { decode, insertMessages, outboxCounts, testMessage } from './support.js';

// The rule itself holds rows behind ANY open write transaction on the server (these tests set
// orderWaitMs to an hour): beside the chaos suite, its 60 s transaction "elsewhere on the server"
// holds these tests' rows too (three timeouts at 10 s on 2026-12-02). So every wait outlasts it.
const BESIDE_LONG_TX_MS = 90_000;

// "No row overtaken by a slow transaction": the relay reads only rows whose transaction is below
// its snapshot's xmin, so a transaction that wrote first but commits last holds later ones back,
// for at most `orderWaitMs` (the last test); the others set it to an hour to test the rule itself.

let tdb: TestDatabase;
let tk: TestKafka;
let relay: Relay | null = null;
const clients: pg.PoolClient[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['slow', 'xid', 'stuck', 'digits', 'bounded'], 1);
});

afterEach(async () => {
  await relay?.stop();
  relay = null;
  for (const c of clients.splice(0)) {
    await c.query('ROLLBACK').catch(() => {});
    c.release();
  }
  await tdb.pool.query('TRUNCATE outbox, outbox_published');
});

afterAll(async () => {
  await tk?.close();
  await tdb?.close();
});

async function begin(): Promise<pg.PoolClient> {
  const c = await tdb.pool.connect();
  clients.push(c);
  await c.query('BEGIN');
  return c;
}

const HOUR = 3_600_000;

function startRelay(orderWaitMs = HOUR): { claims: RelayEventMap['claimed'][] } {
  const claims: RelayEventMap['claimed'][] = [];
  relay = createRelay(
    { topicPrefix: tk.prefix, batchSize: 100, pollIntervalMs: 50, retentionMs: 3_600_000, instanceId: 'snapshot', orderWaitMs },
    { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
  );
  relay.on('claimed', (e) => void claims.push(e));
  return { claims };
}

async function unpublishedValues(): Promise<number[]> {
  const { rows } = await tdb.pool.query<{ value: string }>('SELECT value FROM outbox WHERE published_at IS NULL ORDER BY id');
  return rows.map((r) => (JSON.parse(r.value) as { seq: number }).seq);
}

describe('the snapshot rule', () => {
  it('a row committed behind an open transaction of the same key waits for it, then both go out in order', async () => {
    const key = 'tenant/email/slow';
    const slow = await begin();
    await outboxInsert(fromPgClient(slow), { messages: [testMessage(key, 0, 'slow')] }); // lower id, lower xid
    const fast = await begin();
    await outboxInsert(fromPgClient(fast), { messages: [testMessage(key, 1, 'slow')] });
    await fast.query('COMMIT');

    const { claims } = startRelay();
    await relay!.start();
    // The fast row is committed and visible, yet every claim holds it back.
    await waitFor(() => claims.filter((c) => c.heldBack).length >= 5, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: 'five claims holding the row back',
    });
    expect(claims.every((c) => c.count === 0)).toBe(true);
    expect(await unpublishedValues()).toEqual([1]);

    await slow.query('COMMIT');
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: 'both rows published',
    });
    const messages = await tk.readAll('slow', 2);
    expect(messages.map((m) => decode(m).seq)).toEqual([0, 1]);
  }, 240_000);

  it('orders by (transaction id, row id): a transaction that took its xid first goes first, and nothing is skipped', async () => {
    // The corner where xid order and id order differ: "early" takes its xid before "late" writes,
    // but inserts its outbox row after. The relay publishes in xid order; "late"'s row (lower id)
    // waits for nothing it should not and is not lost.
    const key = 'tenant/email/xid';
    const early = await begin();
    await early.query('SELECT pg_current_xact_id()');
    const late = await begin();
    await outboxInsert(fromPgClient(late), { messages: [testMessage(key, 1, 'xid')] }); // lower id, higher xid
    await outboxInsert(fromPgClient(early), { messages: [testMessage(key, 0, 'xid')] }); // higher id, lower xid
    await early.query('COMMIT');

    startRelay();
    await relay!.start();
    // early's row is below xmin (late is the oldest open transaction) and goes out now.
    await waitFor(async () => (await unpublishedValues()).length === 0 && (await outboxCounts(tdb.pool)).total === 1, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: "early's row published",
    });
    await late.query('COMMIT');
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0 && (await outboxCounts(tdb.pool)).total === 2, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: "late's row published",
    });
    const messages = await tk.readAll('xid', 2);
    expect(messages.map((m) => decode(m).seq)).toEqual([0, 1]);
  }, 240_000);

  it('orders transaction ids as numbers, also across a digit boundary (and so does the pipeline cursor)', async () => {
    // Rows stamped with old xids (explicit, below xmin): by number 9 < 99 < 999 < 1000 < 10000;
    // as text "10000" < "1000" < "9" < "99" < "999". Written in an order that is neither.
    //
    // "Below xmin" has to be made true first. A young cluster may not have reached xid 10000 yet
    // (a shared development server here was at ~5,300), and the snapshot rule rightly holds a row
    // stamped with a future xid back until the counter passes it: the test timed out after 10 s,
    // or not, depending on how many xids other test files had used. One xid per loop turn, each
    // turn its own transaction: at most ~10,000 empty commits in one round trip (under a second
    // here), none once the counter is past.
    await tdb.pool.query(`DO $$ BEGIN WHILE pg_current_xact_id() <= '10000'::xid8 LOOP COMMIT; END LOOP; END $$`);
    const key = 'tenant/email/digits';
    const stamps = ['1000', '99', '10000', '9', '999'];
    for (const txid of stamps) {
      await tdb.pool.query(`INSERT INTO outbox (topic, key, value, headers, txid) VALUES ('digits', $1, $2, '{}', $3::xid8)`, [
        key,
        JSON.stringify({ k: key, seq: [9, 99, 999, 1000, 10000].indexOf(Number(txid)) }),
        txid,
      ]);
    }
    relay = createRelay(
      { topicPrefix: tk.prefix, batchSize: 1, pollIntervalMs: 50, retentionMs: 3_600_000, instanceId: 'digits' },
      { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
    );
    await relay.start();
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: 'five rows published',
    });
    const messages = await tk.readAll('digits', 5);
    expect(messages.map((m) => decode(m).seq)).toEqual([0, 1, 2, 3, 4]);
  }, 240_000);

  it('a relay stuck in a publish does not hold back the other relays (its claim transaction has no xid)', async () => {
    // Relay "a" publishes through a gate that never opens during the test; relay "b" holds the
    // other half of the slots. If a claim transaction held an xid while it waits for Kafka (row
    // locks or an early UPDATE would give it one), every row written after it started would sit
    // above every other relay's xmin until it ends, and "b" would stall too.
    const inner = createKafkaPublisher(tk.kafka);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let stuck = false;
    const gated: Publisher = {
      async publish(messages) {
        stuck = true;
        await gate;
        await inner.publish(messages);
      },
      close: () => inner.close(),
    };
    const config = (instanceId: string) => ({
      topicPrefix: tk.prefix,
      batchSize: 10,
      pollIntervalMs: 50,
      retentionMs: 3_600_000,
      instanceId,
      heartbeatIntervalMs: 100,
      orderWaitMs: HOUR,
    });
    const a = createRelay(config('a'), { db: tdb.db, connectionString: tdb.url, publisher: gated });
    const b = createRelay(config('b'), { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka });
    try {
      await a.start();
      await b.start();
      await waitFor(() => a.slots().length === 32 && b.slots().length === 32, {
        timeoutMs: BESIDE_LONG_TX_MS,
        message: 'a and b split the slots',
      });
      const keyIn = async (slots: readonly number[], tag: string) => {
        for (let i = 0; ; i++) {
          const key = `tenant/email/${tag}-${i}`;
          const { rows } = await tdb.pool.query<{ slot: number }>('SELECT outbox_key_slot($1, 64) AS slot', [key]);
          if (slots.includes(rows[0]!.slot)) return key;
        }
      };
      const aKey = await keyIn(a.slots(), 'a');
      const bKey = await keyIn(b.slots(), 'b');

      await insertMessages(tdb.pool, [testMessage(aKey, 0, 'stuck')]);
      await waitFor(() => stuck, { timeoutMs: BESIDE_LONG_TX_MS, message: 'a stuck in its publish' });
      await insertMessages(tdb.pool, [testMessage(bKey, 0, 'stuck')]); // written after a's claim began
      await waitFor(async () => (await unpublishedValues()).length === 1, {
        timeoutMs: BESIDE_LONG_TX_MS,
        message: 'b publishes its row while a is stuck',
      });
      const messages = await tk.readAll('stuck', 1);
      expect(messages.map((m) => decode(m).key)).toEqual([bKey]);
    } finally {
      open();
      await Promise.all([a.stop(), b.stop()]);
      await inner.close();
    }
  }, 240_000);

  it('the wait is bounded: a row behind a transaction open longer than orderWaitMs goes out while it stays open; its own row follows at its commit (commit order), nothing skipped', async () => {
    const key = 'tenant/email/bounded';
    const slow = await begin();
    await outboxInsert(fromPgClient(slow), { messages: [testMessage(key, 0, 'bounded')] }); // lower id, lower xid
    const fast = await begin();
    await outboxInsert(fromPgClient(fast), { messages: [testMessage(key, 1, 'bounded')] });
    await fast.query('COMMIT');

    startRelay(200);
    await relay!.start();
    await waitFor(async () => (await unpublishedValues()).length === 0, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: "fast's row published while slow is still open",
    });
    expect((await tk.readAll('bounded', 1)).map((m) => decode(m).seq)).toEqual([1]);

    await slow.query('COMMIT');
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0 && (await outboxCounts(tdb.pool)).total === 2, {
      timeoutMs: BESIDE_LONG_TX_MS,
      message: "slow's row published after its commit",
    });
    expect((await tk.readAll('bounded', 2)).map((m) => decode(m).seq)).toEqual([1, 0]);
  }, 240_000);
});
