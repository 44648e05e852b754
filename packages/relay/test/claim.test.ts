import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger, systemClock } from '@notify/runtime';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type ClaimPool, type ClaimedBatch, createBatchSource, createRelayEvents } from '../src/index.js';
import { relayLeaseAcquire } from '../src/sql/relay-lease-acquire.js';
import { type RelayClaimParams, type RelayClaimRow, relayClaimResult, relayClaimText } from '../src/sql/relay-claim.js';
import { fromPgClient } from '@notify/outbox';
import { insertMessages, testMessage } from './support.js';

// The claim transaction against PostgreSQL: relay_claim (migration 0210) and the batch source's
// messages. The fence, the snapshot rule, the pipeline cursor and the plan, statement by statement;
// and the round trips of one cycle, counted.

const HOUR = 3_600_000;
const ME = "r'1"; // a quote in the id: the inlined literal must carry it
const SLOTS = 64;

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase();
});

afterAll(async () => {
  await tdb?.close();
});

beforeEach(async () => {
  await tdb.pool.query('TRUNCATE outbox');
  await tdb.pool.query(`UPDATE relay_leases SET owner = $1, expires_at = now() + interval '1 hour'`, [ME]);
  await tdb.pool.query(
    `INSERT INTO relay_instances (instance_id, started_at, expires_at) VALUES ($1, now(), now() + interval '1 hour')
                        ON CONFLICT (instance_id) DO UPDATE SET sleeping = false`,
    [ME],
  );
});

const params = (p: Partial<RelayClaimParams> = {}): RelayClaimParams => ({
  instanceId: ME,
  now: new Date(),
  slotCount: SLOTS,
  limit: 100,
  // Every committed row is readable: an open transaction anywhere on the (shared) server would
  // otherwise hold the rows back. The held-back test sets the strict rule.
  orderWaitMs: 0,
  idleTimeoutMs: 60_000,
  ...p,
});

/** Runs `fn` on a client inside BEGIN … ROLLBACK. */
async function inTransaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await tdb.pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL READ COMMITTED');
    return await fn(client);
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
}

const claim = async (client: pg.PoolClient, p: Partial<RelayClaimParams> = {}) =>
  relayClaimResult((await client.query(relayClaimText(params(p)))).rows as RelayClaimRow[]);

const seqs = (rows: readonly { value: string }[]) => rows.map((r) => (JSON.parse(r.value) as { seq: number }).seq);

describe('relay_claim', () => {
  it('locks the slots it leases, and a takeover cannot take them until the claim transaction ends', async () => {
    await insertMessages(tdb.pool, [testMessage('k', 0), testMessage('k', 1)]);
    await inTransaction(async (client) => {
      const { slots, rows, heldBack } = await claim(client);
      expect(slots).toEqual([...Array(SLOTS).keys()]);
      expect(seqs(rows)).toEqual([0, 1]);
      expect(heldBack).toBe(false);
      // Another instance finds every lease expired, yet the shared locks fence it off.
      await tdb.pool.query(`UPDATE relay_leases SET expires_at = now() - interval '1 second'`);
      const taker = fromPgClient(tdb.pool);
      const now = new Date();
      expect(await relayLeaseAcquire(taker, { instanceId: 'taker', now, expiresAt: new Date(now.getTime() + HOUR), count: SLOTS })).toEqual(
        [],
      );
    });
    const now = new Date();
    const taken = await relayLeaseAcquire(fromPgClient(tdb.pool), {
      instanceId: 'taker',
      now,
      expiresAt: new Date(now.getTime() + HOUR),
      count: SLOTS,
    });
    expect(taken).toHaveLength(SLOTS);
  });

  it('locks and reads only the slots it still owns, and only `only` of them', async () => {
    await insertMessages(tdb.pool, [testMessage('a', 0), testMessage('b', 1)]);
    const { rows: slotRows } = await tdb.pool.query<{ a: number; b: number }>(
      `SELECT outbox_key_slot('a', $1) AS a, outbox_key_slot('b', $1) AS b`,
      [SLOTS],
    );
    const { a, b } = slotRows[0]!;
    expect(a).not.toBe(b);
    await tdb.pool.query(`UPDATE relay_leases SET owner = 'other' WHERE slot = $1`, [b]);
    await inTransaction(async (client) => {
      const all = await claim(client);
      expect(all.slots).not.toContain(b);
      expect(seqs(all.rows)).toEqual([0]);
    });
    await inTransaction(async (client) => {
      const none = await claim(client, { only: [b] });
      expect(none).toEqual({ slots: [], rows: [], heldBack: false });
    });
  });

  it('holds back rows behind an older open transaction, reads them past orderWaitMs, and asks only for a short batch', async () => {
    const blocker = await tdb.pool.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT pg_current_xact_id()'); // an xid older than the rows below
      await insertMessages(tdb.pool, [testMessage('h', 0), testMessage('h', 1)]);
      await inTransaction(async (client) => {
        expect(await claim(client, { orderWaitMs: HOUR })).toMatchObject({ rows: [], heldBack: true });
        // Past the bound the rows are read, and none is counted as held back.
        const late = await claim(client, { orderWaitMs: 0 });
        expect(seqs(late.rows)).toEqual([0, 1]);
        expect(late.heldBack).toBe(false);
        // A full batch does not ask.
        expect(await claim(client, { orderWaitMs: 0, limit: 1 })).toMatchObject({ heldBack: false });
      });
    } finally {
      await blocker.query('ROLLBACK');
      blocker.release();
    }
  });

  it('continues after the pipeline cursor, in (txid, id) order', async () => {
    await insertMessages(
      tdb.pool,
      [0, 1, 2, 3, 4].map((i) => testMessage('p', i)),
    );
    await inTransaction(async (client) => {
      const first = await claim(client, { limit: 2 });
      expect(seqs(first.rows)).toEqual([0, 1]);
      const last = first.rows[1]!;
      const next = await claim(client, { limit: 2, only: first.slots, after: { txid: last.txid, id: last.id } });
      expect(seqs(next.rows)).toEqual([2, 3]);
      expect(next.heldBack).toBe(false);
    });
  });

  it('reads a 10,000-row backlog in index order without a sort', async () => {
    // With batches of 1,000 the planner used to read the whole table and sort every unpublished
    // row for the first claim (250–500 ms instead of 13–22 ms); relay_claim turns sorts off.
    await tdb.pool.query(
      `INSERT INTO outbox (topic, key, value, headers)
       SELECT 'requests', 'tenant/email/' || (g % 2000), '{}', '{}' FROM generate_series(1, 10000) g`,
    );
    await tdb.pool.query('ANALYZE outbox');
    await inTransaction(async (client) => {
      // auto_explain sends the plan of every statement inside the function to this client.
      const plans: string[] = [];
      const onNotice = (n: { message?: string }) => void plans.push(n.message ?? '');
      client.on('notice', onNotice);
      await client.query(`LOAD 'auto_explain'`);
      await client.query(`SET LOCAL auto_explain.log_min_duration = 0`);
      await client.query(`SET LOCAL auto_explain.log_nested_statements = on`);
      await client.query(`SET LOCAL client_min_messages = log`);
      const { rows } = await claim(client, { limit: 1_000 });
      await client.query(`SET LOCAL client_min_messages = notice`);
      client.off('notice', onNotice);
      expect(rows).toHaveLength(1_000);
      const read = plans.find((p) => p.includes('FROM outbox o'));
      expect(read, plans.join('\n---\n')).toContain('Index Scan using outbox_unpublished_txid_idx');
      expect(read).not.toMatch(/Sort|Seq Scan on outbox /);
    });
  });
});

describe('the batch source', () => {
  /** The claim pool, counting the messages (round trips) each client sends. */
  function countingPool(): ClaimPool & { messages: string[]; end(): Promise<void> } {
    const pool = new pg.Pool({ connectionString: tdb.url, max: 3 });
    const messages: string[] = [];
    const counted = new WeakSet<pg.PoolClient>();
    return {
      messages,
      async connect() {
        const client = await pool.connect();
        if (counted.has(client)) return client;
        counted.add(client);
        const query = client.query.bind(client) as (...args: unknown[]) => unknown;
        (client as { query: unknown }).query = (text: unknown, values?: unknown) => {
          messages.push(String(text));
          return query(text, values);
        };
        return client;
      },
      end: () => pool.end(),
    };
  }

  let pool: ReturnType<typeof countingPool>;
  let batch: ClaimedBatch | undefined;
  beforeEach(() => {
    pool = countingPool();
  });
  afterEach(async () => {
    await batch?.rollback();
    batch = undefined;
    await pool.end();
  });

  const source = () =>
    createBatchSource(
      { instanceId: ME, batchSize: 100, publishTimeoutMs: 30_000, orderWaitMs: 0 },
      { pool, clock: systemClock, events: createRelayEvents(silentLogger), slotCount: () => SLOTS },
    );
  const sleeping = async () =>
    (await tdb.pool.query<{ sleeping: boolean }>('SELECT sleeping FROM relay_instances WHERE instance_id = $1', [ME])).rows[0]!.sleeping;
  const unpublished = async () =>
    (await tdb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')).rows[0]!.n;

  it('claims and marks a batch in two round trips, an empty claim in two', async () => {
    await insertMessages(tdb.pool, [testMessage('c', 0), testMessage('c', 1)]);
    batch = await source().claim();
    expect(seqs(batch.rows)).toEqual([0, 1]);
    await batch.commit(1);
    expect(await unpublished()).toBe(0);
    expect(pool.messages).toHaveLength(2);
    const empty = await source().claim();
    expect(empty.rows).toEqual([]);
    expect(pool.messages).toHaveLength(4);
    expect(pool.messages[3]).toBe('COMMIT');
  });

  it('raises the sleeping flag before the read (committed on its own), and clears it with the mark', async () => {
    await insertMessages(tdb.pool, [testMessage('s', 0)]);
    batch = await source().claim({ sleep: true });
    // The claim transaction is still open: the flag is visible to others all the same.
    expect(await sleeping()).toBe(true);
    expect(batch.rows).toHaveLength(1);
    await batch.commit(1, [], { awake: true });
    expect(await sleeping()).toBe(false);
    expect(await unpublished()).toBe(0);
    expect(pool.messages).toHaveLength(2);
  });

  it('a rollback leaves the rows unpublished and frees the slot locks', async () => {
    await insertMessages(tdb.pool, [testMessage('r', 0)]);
    const claimed = await source().claim();
    await claimed.rollback();
    expect(await unpublished()).toBe(1);
    const { rows } = await tdb.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_locks
        WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`);
    expect(rows[0]!.n).toBe(0);
    batch = await source().claim();
    expect(batch.rows).toHaveLength(1);
  });
});
