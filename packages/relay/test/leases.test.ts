import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type Publisher, type Relay, type RelayConfig, createKafkaPublisher, createRelay } from '../src/index.js';
import { SLOT_LOCK_NAMESPACE } from '../src/sql/relay-slot-lock.js';
import { decode, insertMessages, keyOrderViolations, outboxCounts, testMessage } from './support.js';

let tdb: TestDatabase;
let tk: TestKafka;
const running: Relay[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['fence', 'handover', 'expiry', 'joined'], 3);
});

afterEach(async () => {
  await Promise.all(running.splice(0).map((r) => r.stop()));
  await tdb.pool.query('TRUNCATE outbox, outbox_published');
  await tdb.pool.query('UPDATE relay_leases SET owner = NULL, expires_at = NULL');
  await tdb.pool.query('DELETE FROM relay_instances');
});

afterAll(async () => {
  await tk?.close();
  await tdb?.close();
});

function relay(instanceId: string, overrides: Partial<RelayConfig> = {}, publisher?: Publisher): Relay {
  const config = {
    topicPrefix: tk.prefix,
    batchSize: 50,
    pollIntervalMs: 100,
    retentionMs: 3_600_000,
    instanceId,
    leaseTtlMs: 60_000,
    heartbeatIntervalMs: 100,
    ...overrides,
  };
  const base = { db: tdb.db, connectionString: tdb.url };
  const r = publisher ? createRelay(config, { ...base, publisher }) : createRelay(config, { ...base, kafka: tk.kafka });
  running.push(r);
  return r;
}

async function slotOf(key: string): Promise<number> {
  const { rows } = await tdb.pool.query<{ slot: number }>('SELECT outbox_key_slot($1, 64) AS slot', [key]);
  return rows[0]!.slot;
}

describe('relay leases', () => {
  it('three instances split the 64 slots 22/21/21 without overlap; a leaver’s slots move at once', async () => {
    const [a, b, c] = [relay('a'), relay('b'), relay('c')];
    await Promise.all([a.start(), b.start(), c.start()]);
    await waitFor(() => a.slots().length === 22 && b.slots().length === 21 && c.slots().length === 21, { message: '22/21/21' });
    const all = [...a.slots(), ...b.slots(), ...c.slots()];
    expect(new Set(all).size).toBe(64);

    // A polite stop releases its leases: the others take them without waiting for the 60 s TTL.
    await b.stop();
    await waitFor(() => a.slots().length === 32 && c.slots().length === 32, { timeoutMs: 10_000, message: '32/32 after b left' });
    const { rows } = await tdb.pool.query<{ owner: string; n: number }>(
      'SELECT owner, count(*)::int AS n FROM relay_leases GROUP BY owner ORDER BY owner',
    );
    expect(rows).toEqual([
      { owner: 'a', n: 32 },
      { owner: 'c', n: 32 },
    ]);
  });

  it('slots released while a batch of theirs is being published move only after that batch commits', async () => {
    // A key in the upper half of the slots: the ones relay "a" gives up when "b" joins.
    let key = '';
    for (let i = 0; key === '' || (await slotOf(key)) < 32; i++) key = `tenant/email/handover-${i}`;
    const slot = await slotOf(key);
    await insertMessages(
      tdb.pool,
      Array.from({ length: 10 }, (_, seq) => testMessage(key, seq, 'handover')),
    );

    // Relay "a" publishes through a gate: its first batch (rows 0..4) waits before reaching Kafka.
    const kafkaPublisher = createKafkaPublisher(tk.kafka);
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let entered = false;
    const gated: Publisher = {
      async publish(messages) {
        entered = true;
        await gate;
        await kafkaPublisher.publish(messages);
      },
      close: () => kafkaPublisher.close(),
    };
    const a = relay('a', { batchSize: 5 }, gated);
    await a.start();
    await waitFor(() => entered, { message: 'a is publishing rows 0..4' });

    // "b" joins: "a" releases slots 32..63 (the key's slot among them) at its next heartbeat,
    // but its claim transaction holds the shared lock of every slot it had until it commits.
    const b = relay('b', { batchSize: 5 });
    let bClaims = 0;
    b.on('claimed', () => void bClaims++);
    await b.start();
    await waitFor(() => a.slots().length === 32, { timeoutMs: 10_000, message: 'a gave up half its slots' });
    const free = await tdb.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM relay_leases WHERE owner IS NULL AND slot >= 32');
    expect(free.rows[0]!.n).toBe(32); // released by "a", not taken by "b"
    const claimsBefore = bClaims;
    await waitFor(() => bClaims >= claimsBefore + 5, { message: 'b keeps polling and heartbeating' });
    expect(b.slots()).toEqual([]);

    open();
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { timeoutMs: 10_000, message: 'all ten published' });
    // ("a" may publish rows 5..9 itself: it claimed them ahead, before it released the slots.)
    await waitFor(() => b.slots().length === 32 && b.slots().includes(slot), {
      timeoutMs: 10_000,
      message: 'b took the slots once a committed',
    });
    const messages = await tk.readAll('handover', 10);
    expect(messages.map((m) => decode(m).seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    await a.stop();
    await kafkaPublisher.close();
  });

  it('does not take a slot while its previous owner still has a batch in flight, even with the lease expired', async () => {
    const key = 'tenant/email/fenced';
    const slot = await slotOf(key);
    await insertMessages(
      tdb.pool,
      [0, 1, 2, 3, 4].map((seq) => testMessage(key, seq, 'fence')),
    );
    const other = 'tenant/email/free';
    expect(await slotOf(other)).not.toBe(slot);
    await insertMessages(tdb.pool, [testMessage(other, 0, 'fence')]);

    // A "ghost" relay mid-batch: its lease on the slot has expired, but its claim transaction is
    // still open, holding the slot's shared advisory lock (as a claim does while it waits for
    // Kafka); it has published row 0 and not yet marked it.
    await tdb.pool.query(`UPDATE relay_leases SET owner = 'ghost', expires_at = now() - interval '1 minute' WHERE slot = $1`, [slot]);
    const ghost = await tdb.pool.connect();
    try {
      await ghost.query('BEGIN');
      await ghost.query('SELECT pg_advisory_xact_lock_shared($1, $2)', [SLOT_LOCK_NAMESPACE, slot]);
      const { rows } = await ghost.query<{ id: string }>('SELECT id FROM outbox WHERE key = $1 ORDER BY id LIMIT 1', [key]);

      const r = relay('newcomer');
      await r.start();
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 5, { message: 'the other key published' });
      expect(r.slots()).toHaveLength(63);
      expect(r.slots()).not.toContain(slot);

      // The ghost marks row 0 and commits; only now may the slot move.
      await ghost.query('UPDATE outbox SET published_at = now() WHERE id = $1', [rows[0]!.id]);
      await ghost.query('COMMIT');
    } finally {
      ghost.release();
    }
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
      timeoutMs: 10_000,
      message: 'fenced key published after the ghost committed',
    });
    const messages = (await tk.readAll('fence', 5)).filter((m) => decode(m).key === key);
    // Rows 1..4 (row 0 was the ghost's), in order: the newcomer never overtook the ghost's row.
    expect(messages.map((m) => decode(m).seq)).toEqual([1, 2, 3, 4]);
  });

  it('a slot taken over in the middle of a backlog is published from its first row, in order', async () => {
    // Rows of two keys, interleaved: "mine" (a slot the relay gets at once) and "late" (a slot a
    // ghost holds for another second). The relay drains its backlog in pipelined batches; the
    // late slot joins mid-drain, when the pipeline's cursor is already past the late key's first
    // rows. They must not be skipped (and published after the ones above the cursor).
    let mine = '';
    let late = '';
    for (let i = 0; mine === '' || late === '' || (await slotOf(mine)) === (await slotOf(late)); i++) {
      mine = `tenant/email/mine-${i}`;
      late = `tenant/email/late-${i}`;
    }
    const lateSlot = await slotOf(late);
    await tdb.pool.query(`UPDATE relay_leases SET owner = 'ghost', expires_at = now() + interval '1 second' WHERE slot = $1`, [lateSlot]);
    const rows = [];
    for (let seq = 0; seq < 100; seq++) rows.push(testMessage(mine, seq, 'joined'), testMessage(late, seq, 'joined'));
    await insertMessages(tdb.pool, rows);

    // The third batch waits until the late slot is taken, so the takeover lands mid-drain.
    const kafkaPublisher = createKafkaPublisher(tk.kafka);
    let calls = 0;
    // eslint-disable-next-line prefer-const -- assigned once the publisher that refers to it exists
    let r!: Relay;
    const publisher: Publisher = {
      async publish(messages) {
        if (++calls === 3) await waitFor(() => r.slots().includes(lateSlot), { timeoutMs: 10_000, message: 'the late slot taken' });
        await kafkaPublisher.publish(messages);
      },
      close: () => kafkaPublisher.close(),
    };
    r = relay('joiner', { batchSize: 10 }, publisher);
    await r.start();
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { timeoutMs: 15_000, message: 'all 200 published' });
    expect(calls).toBeGreaterThan(3);
    const messages = await tk.readAll('joined', 200);
    expect(
      keyOrderViolations(
        messages,
        new Map([
          [mine, 100],
          [late, 100],
        ]),
        true,
      ),
    ).toEqual([]);
    await r.stop();
    await kafkaPublisher.close();
  });

  it('takes an abandoned lease only after it expires', async () => {
    const key = 'tenant/email/abandoned';
    const slot = await slotOf(key);
    const { rows } = await tdb.pool.query<{ expires_at: Date }>(
      `UPDATE relay_leases SET owner = 'crashed', expires_at = now() + interval '1500 milliseconds' WHERE slot = $1 RETURNING expires_at`,
      [slot],
    );
    const expiresAt = rows[0]!.expires_at.getTime();
    await insertMessages(
      tdb.pool,
      [0, 1, 2].map((seq) => testMessage(key, seq, 'expiry')),
    );
    const r = relay('heir');
    let tookAt: number | null = null;
    r.on('leaseChanged', ({ acquired }) => {
      if (acquired.includes(slot)) tookAt = Date.now();
    });
    await r.start();
    expect(r.slots()).toHaveLength(63);
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, { timeoutMs: 10_000, message: 'abandoned slot published' });
    expect(tookAt).not.toBeNull();
    expect(tookAt!).toBeGreaterThanOrEqual(expiresAt);
    const messages = await tk.readAll('expiry', 3);
    expect(keyOrderViolations(messages, new Map([[key, 3]]), true)).toEqual([]);
  });
});
