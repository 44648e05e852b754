import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { createRelay } from '../src/index.js';
import { decode, insertMessages, keyOrderViolations, outboxCounts, testMessage } from './support.js';

// Crash safety: a relay SIGKILLed after Kafka acknowledged a batch and before the batch was
// marked published loses nothing. The next owner republishes the batch (at-least-once).

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('./fixtures/relay-process.ts', import.meta.url));
const KEYS = 10;
const PER_KEY = 30;
const BATCH = 100;
const LEASE_TTL_MS = 1_500;

let tdb: TestDatabase;
let tk: TestKafka;
let child: ChildProcess | null = null;

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['requests'], 3);
});

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await tk?.close();
  await tdb?.close();
});

describe('a relay killed between publish and mark', () => {
  it('loses nothing: the next relay republishes the unmarked batch after the lease expires', async () => {
    const perKey = new Map<string, number>();
    const messages = [];
    for (let seq = 0; seq < PER_KEY; seq++) {
      for (let k = 0; k < KEYS; k++) {
        const key = `tenant/sms/crash-${k}`;
        perKey.set(key, PER_KEY);
        messages.push(testMessage(key, seq));
      }
    }
    await insertMessages(tdb.pool, messages);

    child = spawn(process.execPath, ['--conditions=@notify/source', '--import', 'tsx', FIXTURE], {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: tdb.url,
        KAFKA_BROKERS: tk.brokers.join(','),
        TOPIC_PREFIX: tk.prefix,
        INSTANCE_ID: 'doomed',
        BATCH_SIZE: String(BATCH),
        LEASE_TTL_MS: String(LEASE_TTL_MS),
        PAUSE_AFTER_PUBLISH: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<NodeJS.Signals | number | null>((r) => child!.on('exit', (code, signal) => r(signal ?? code)));
    let paused: string[] | null = null;
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as { event: string; ids?: string[] };
      if (msg.event === 'paused') paused = msg.ids!;
    });
    await waitFor(() => paused, { timeoutMs: 30_000, message: `the child to publish its first batch (stderr: ${stderr})` });
    const ids = paused!;
    expect(ids).toHaveLength(BATCH);

    // Kafka has the batch; the database still says unpublished.
    const before = await tk.readAll('requests', BATCH);
    expect(before).toHaveLength(BATCH);
    const { rows } = await tdb.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM outbox WHERE id = ANY($1::bigint[]) AND published_at IS NULL',
      [ids],
    );
    expect(rows[0]!.n).toBe(BATCH);

    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    const leases = await tdb.pool.query<{ n: number; until: Date }>(
      `SELECT count(*)::int AS n, max(expires_at) AS until FROM relay_leases WHERE owner = 'doomed'`,
    );
    expect(leases.rows[0]!.n).toBe(64);
    const leaseEnd = leases.rows[0]!.until.getTime();

    // A new relay: it must wait for the dead one's leases to expire, then publish everything.
    const heir = createRelay(
      {
        topicPrefix: tk.prefix,
        batchSize: BATCH,
        pollIntervalMs: 100,
        retentionMs: 3_600_000,
        instanceId: 'heir',
        leaseTtlMs: 5_000,
        heartbeatIntervalMs: 100,
      },
      { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
    );
    let firstPublishAt: number | null = null;
    heir.on('published', () => void (firstPublishAt ??= Date.now()));
    await heir.start();
    try {
      await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
        timeoutMs: 20_000,
        message: 'the heir to publish every row',
      });
    } finally {
      await heir.stop();
    }
    expect(firstPublishAt!).toBeGreaterThanOrEqual(leaseEnd);

    const total = KEYS * PER_KEY;
    const all = await tk.readAll('requests', total + BATCH);
    // Every row at least once; exactly the killed batch twice.
    const counts = new Map<string, number>();
    for (const m of all) {
      const { key, seq } = decode(m);
      counts.set(`${key}#${seq}`, (counts.get(`${key}#${seq}`) ?? 0) + 1);
    }
    expect(counts.size).toBe(total);
    expect([...counts.values()].filter((n) => n === 2)).toHaveLength(BATCH);
    expect([...counts.values()].every((n) => n === 1 || n === 2)).toBe(true);
    expect(keyOrderViolations(all, perKey, false)).toEqual([]);
  });
});
