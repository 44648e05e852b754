// Relay throughput against raw kafkajs, same run, same messages, same producer settings.
//
//   pnpm exec tsx bench/relay.ts [--rows 100000] [--batch 500] [--rounds 3] [--partitions 6]
//   (--batch takes a list, e.g. --batch 250,500,1000,2000, to compare batch sizes)
//
// Each round: pre-fill the outbox with `rows` realistic delivery-request rows (one INSERT …
// generate_series), each carrying its notification.queued event as enqueue writes them (migration
// 0150: one row, two messages), time one relay instance publishing all of them (start → last row
// marked), then time raw kafkajs `sendBatch` of the same messages (outbox_messages: requests and
// events topics) in chunks of the same number of rows with an identically configured idempotent
// producer. Prints both, the ratio, and writes
// bench/results/relay.json. Uses its own database and topics and removes them at the end.
// Env: DATABASE_URL (server; the database part is replaced), KAFKA_BROKERS (else the project's
// broker is started or reused through scripts/kafka.mjs).
import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import pg from 'pg';
import { DEFAULT_DATABASE_URL } from '@notify/cli';
import { createDb } from '@notify/runtime';
import { topicName } from '@notify/contract';
import { migrateToLatest, withDatabase } from '@notify/migrations';
import { createRelay } from '@notify/relay';
import { kafkaScript } from './lib/kafka-script.js';
import { ROOT } from './lib/root.js';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '500' },
    rounds: { type: 'string', default: '3' },
    partitions: { type: 'string', default: '6' },
  },
});
const ROWS = Number(args.rows);
const BATCHES = args.batch.split(',').map(Number);
const ROUNDS = Number(args.rounds);
const PARTITIONS = Number(args.partitions);

// The producer settings of createKafkaPublisher, repeated here for the baseline.
const PRODUCER = {
  idempotent: true,
  maxInFlightRequests: 1,
  createPartitioner: Partitioners.DefaultPartitioner,
  allowAutoTopicCreation: false,
  retry: { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 },
} as const;

const serverUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
const runId = `bench_relay_${randomBytes(3).toString('hex')}`;
const dbName = runId;
const prefix = runId.replace(/_/g, '-');
const TOPIC_SUFFIXES = ['requests', 'events'] as const;
const relayTopics = TOPIC_SUFFIXES.map((s) => topicName(`${prefix}.relay`, s));
const rawTopics = TOPIC_SUFFIXES.map((s) => topicName(`${prefix}.raw`, s));

const log = (line: string) => process.stderr.write(`${line}\n`);

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

// Realistic rows: a delivery request (~190 bytes) with its seven headers, 2,000 recipients over
// 20 tenants, in the shape buildDeliveryRequest produces, carrying its queued event (~270 bytes).
const PREFILL_SQL = `
INSERT INTO outbox (topic, key, value, headers, event_value)
SELECT 'requests',
       'tenant-' || (g % 20) || '/email/' || left(md5((g % 2000)::text), 22),
       json_build_object('v', 1, 'type', 'notification.deliver', 'id', 'ntf_' || upper(left(md5(g::text), 26)),
                         'tenant_id', 'tenant-' || (g % 20), 'channel', 'email', 'attempt', 1,
                         'due_at', '2026-05-01T12:00:00.000Z')::text,
       jsonb_build_object('notification-id', 'ntf_' || upper(left(md5(g::text), 26)), 'tenant-id', 'tenant-' || (g % 20),
                          'schema-version', '1', 'message-type', 'notification.deliver', 'attempt', '1',
                          'due-at', '2026-05-01T12:00:00.000Z',
                          'traceparent', '00-' || md5(g::text) || '-' || left(md5((g + 1)::text), 16) || '-01'),
       json_build_object('v', 1, 'type', 'notification.queued', 'id', 'ntf_' || upper(left(md5(g::text), 26)),
                         'tenant_id', 'tenant-' || (g % 20), 'channel', 'email', 'state', 'queued', 'attempts', 0,
                         'dead_reason', null, 'last_error', null, 'next_attempt_at', '2026-05-01T12:00:00.000Z',
                         'occurred_at', '2026-05-01T12:00:00.000Z')::text
  FROM generate_series(1, $1::int) g`;

/** One Kafka message of an outbox row (outbox_messages). */
interface Message {
  topic: string;
  key: string;
  value: string;
  headers: Record<string, string>;
}
/** An outbox row's messages: the request, then the queued event it carries. */
type Row = Message[];

interface Round {
  batchSize: number;
  round: number;
  /** CPU time of this node process (user + system) during the run: independent of other load on the machine. */
  relayCpuMs: number;
  rawCpuMs: number;
  relayMs: number;
  relayRowsPerSec: number;
  rawMs: number;
  rawRowsPerSec: number;
  ratio: number;
  relayPublishShare: number;
}

async function main(): Promise<void> {
  const kafkaInfo = process.env.KAFKA_BROKERS ? { brokers: process.env.KAFKA_BROKERS } : await (await kafkaScript()).ensureKafka({ log });
  const kafka = new Kafka({ clientId: 'bench-relay', brokers: kafkaInfo.brokers.split(','), logLevel: logLevel.ERROR });
  const kadmin = kafka.admin();
  await kadmin.connect();
  await admin((c) => c.query(`CREATE DATABASE ${pg.escapeIdentifier(dbName)}`));
  const url = withDatabase(serverUrl, dbName);
  const db = createDb({ connectionString: url, max: 4, applicationName: 'bench-relay' });
  const results: Round[] = [];
  try {
    await migrateToLatest(db);
    await createTopics(kadmin, [...relayTopics, ...rawTopics]);
    const pool = new pg.Pool({ connectionString: url, max: 2 });
    try {
      // Warm-up: JIT, connections, topic metadata.
      await rawRun(kafka, await prefill(pool, 5_000), 500);
      await relayRun(db, url, kafka, pool, 500);

      for (const batchSize of BATCHES) {
        for (let round = 1; round <= ROUNDS; round++) {
          const rows = await prefill(pool, ROWS);
          const cpu0 = process.cpuUsage();
          const relay = await relayRun(db, url, kafka, pool, batchSize);
          const cpu1 = process.cpuUsage();
          const rawMs = await rawRun(kafka, rows, batchSize);
          const cpu2 = process.cpuUsage();
          const cpuMs = (a: NodeJS.CpuUsage, b: NodeJS.CpuUsage) => Math.round((b.user - a.user + b.system - a.system) / 1000);
          const r: Round = {
            batchSize,
            round,
            relayCpuMs: cpuMs(cpu0, cpu1),
            rawCpuMs: cpuMs(cpu1, cpu2),
            relayMs: Math.round(relay.ms),
            relayRowsPerSec: Math.round((ROWS / relay.ms) * 1000),
            rawMs: Math.round(rawMs),
            rawRowsPerSec: Math.round((ROWS / rawMs) * 1000),
            ratio: Number((rawMs / relay.ms).toFixed(3)),
            relayPublishShare: Number((relay.publishMs / relay.ms).toFixed(3)),
          };
          results.push(r);
          log(
            `batch ${batchSize} round ${round}: relay ${r.relayRowsPerSec} rows/s (${r.relayMs} ms, ${Math.round(r.relayPublishShare * 100)}% in Kafka, node CPU ${r.relayCpuMs} ms), raw ${r.rawRowsPerSec} rows/s (${r.rawMs} ms, node CPU ${r.rawCpuMs} ms), ratio ${r.ratio}`,
          );
        }
      }
    } finally {
      await pool.end();
    }
  } finally {
    await db.destroy();
    await kadmin.deleteTopics({ topics: [...relayTopics, ...rawTopics] }).catch(() => {});
    await kadmin.disconnect();
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(dbName)} WITH (FORCE)`));
  }

  const summary = BATCHES.map((batchSize) => {
    const rs = results.filter((r) => r.batchSize === batchSize);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const bestRelay = Math.max(...rs.map((r) => r.relayRowsPerSec));
    const bestRaw = Math.max(...rs.map((r) => r.rawRowsPerSec));
    return {
      batchSize,
      // Medians of the rounds; the ratio is the median of each round's paired ratio.
      relayRowsPerSec: median(rs.map((r) => r.relayRowsPerSec)),
      rawRowsPerSec: median(rs.map((r) => r.rawRowsPerSec)),
      ratio: median(rs.map((r) => r.ratio)),
      nodeCpuRelayOverRaw: median(rs.map((r) => Number((r.relayCpuMs / r.rawCpuMs).toFixed(3)))),
      // Best of the rounds: the least disturbed run of each on a shared machine.
      bestRelayRowsPerSec: bestRelay,
      bestRawRowsPerSec: bestRaw,
      bestRatio: Number((bestRelay / bestRaw).toFixed(3)),
    };
  });
  const report = {
    at: new Date().toISOString(),
    loadAverage: loadavg(),
    rows: ROWS,
    // each row is a request carrying its queued event: two messages (migration 0150)
    messagesPerRow: 2,
    rounds: ROUNDS,
    partitions: PARTITIONS,
    machine: { cpus: cpus().length, cpu: cpus()[0]?.model, node: process.version },
    producer: { idempotent: true, acks: -1, maxInFlightRequests: 1, partitioner: 'DefaultPartitioner (murmur2)', compression: 'none' },
    summary,
    rounds_detail: results,
  };
  await mkdir(path.join(ROOT, 'bench', 'results'), { recursive: true });
  await writeFile(path.join(ROOT, 'bench', 'results', 'relay.json'), `${JSON.stringify(report, null, 2)}\n`);
  for (const s of summary) {
    console.log(
      `batch ${s.batchSize}: relay ${s.relayRowsPerSec} rows/s, raw kafkajs ${s.rawRowsPerSec} rows/s (2 messages each), relay/raw ${s.ratio} (median of ${ROUNDS} paired rounds, ${ROWS} rows); best: relay ${s.bestRelayRowsPerSec}, raw ${s.bestRawRowsPerSec}, ratio ${s.bestRatio}`,
    );
  }
  console.log('wrote bench/results/relay.json');
}

// A broker under load can answer the leader wait with UNKNOWN_TOPIC_OR_PARTITION (seen at load
// average ~40 with four topics); the topics exist by then, so ask again until every one has leaders.
async function createTopics(kadmin: ReturnType<Kafka['admin']>, topics: readonly string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await kadmin.createTopics({ topics: topics.map((topic) => ({ topic, numPartitions: PARTITIONS })), waitForLeaders: true });
      await kadmin.fetchTopicMetadata({ topics: [...topics] });
      return;
    } catch (err) {
      if (attempt >= 10) throw err;
      log(`  (creating topics, attempt ${attempt}: ${(err as Error).message}; again in 2 s)`);
      await new Promise((r) => setTimeout(r, 2_000));
    }
  }
}

async function prefill(pool: pg.Pool, n: number): Promise<Row[]> {
  await pool.query('TRUNCATE outbox, outbox_published');
  const t0 = performance.now();
  await pool.query(PREFILL_SQL, [n]);
  await pool.query('VACUUM ANALYZE outbox');
  log(`pre-filled ${n} rows in ${Math.round(performance.now() - t0)} ms`);
  const { rows } = await pool.query<Message & { id: string }>(
    'SELECT id, topic, key, value, headers FROM outbox_messages ORDER BY txid, id, part',
  );
  const byRow: Row[] = [];
  let last: string | undefined;
  for (const { id, ...m } of rows) {
    if (id !== last) byRow.push([]);
    byRow.at(-1)!.push({ ...m, topic: topicName(`${prefix}.raw`, m.topic) });
    last = id;
  }
  return byRow;
}

async function relayRun(
  db: ReturnType<typeof createDb>,
  url: string,
  kafka: Kafka,
  pool: pg.Pool,
  batchSize: number,
): Promise<{ ms: number; publishMs: number }> {
  const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL');
  const total = rows[0]!.n;
  const relay = createRelay(
    { topicPrefix: `${prefix}.relay`, batchSize, pollIntervalMs: 1_000, retentionMs: 3_600_000, instanceId: `${runId}-${batchSize}` },
    { db, connectionString: url, kafka },
  );
  let published = 0;
  let publishMs = 0;
  let failures = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  relay.on('published', (e) => {
    published += e.count;
    publishMs += e.publishMs;
    if (published >= total) done();
  });
  relay.on('publishError', () => void failures++);
  const t0 = performance.now();
  await relay.start();
  await finished;
  const ms = performance.now() - t0;
  await relay.stop();
  if (failures > 0) log(`  (relay run had ${failures} failed batches, retried)`);
  return { ms, publishMs };
}

async function rawRun(kafka: Kafka, rows: readonly Row[], batchSize: number): Promise<number> {
  // The window starts before connect, as the relay's starts before relay.start() (which connects
  // its producer too): both are timed from cold to the last message acknowledged. Before
  // 2026-12-02 only the relay's window held its start-up, which weighed on --quick's 10,000 rows.
  const t0 = performance.now();
  const producer = kafka.producer(PRODUCER);
  await producer.connect();
  try {
    for (let i = 0; i < rows.length; i += batchSize) {
      // Grouped by topic, as the relay's publisher groups a batch.
      const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
      for (const m of rows.slice(i, i + batchSize).flat()) {
        let list = byTopic.get(m.topic);
        if (!list) byTopic.set(m.topic, (list = []));
        list.push({ key: m.key, value: m.value, headers: m.headers });
      }
      await producer.sendBatch({
        acks: -1,
        timeout: 30_000,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
    }
    return performance.now() - t0;
  } finally {
    await producer.disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
