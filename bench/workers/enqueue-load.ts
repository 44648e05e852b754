// Worker for the `enqueue` scenario (runs in its own process so its peak RSS is its own).
// Alternates rounds of enqueue() and of a plain INSERT into a comparable table, on the same
// database, with the same pool, the same transaction shape (BEGIN; one statement; COMMIT) and
// the same number of concurrent clients. Diagnostic variants show where enqueue's time goes.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type pg from 'pg';
import { type NotificationIntent, enqueue } from '@notify/outbox';
import { createDb } from '@notify/runtime';
import { ORDER_DATA } from '../lib/load.js';
import { latencySummary, median } from '../lib/stats.js';
import { workerMain } from '../lib/worker.js';
import { benchPool } from '../lib/pool.js';

/** The variants the worker can run. */
export const ENQUEUE_VARIANTS = {
  /** The baseline: BEGIN; INSERT one row into bench_plain_insert; COMMIT. */
  plain: 'plain INSERT + COMMIT',
  /** BEGIN; enqueue(pgClient, intent); COMMIT. */
  enqueue: 'enqueue() on a pg client',
  /** db.transaction().execute((trx) => enqueue(trx, intent)): the HTTP API's shape. */
  kysely: 'enqueue() in a Kysely transaction',
  /** enqueue() with its statement sent unnamed, so PostgreSQL parses and plans it on every call (what the prepared statement saves). */
  unprepared: 'enqueue() without a prepared statement',
  /** enqueue() with the outbox NOTIFY trigger disabled (what the trigger costs). */
  noTrigger: 'enqueue() without the outbox NOTIFY trigger',
  /** notify_enqueue_item called directly: what other languages pay, and enqueue() for an intent off its plain path. */
  sqlFunction: 'notify_enqueue_item() (the SQL function)',
  /** enqueue() of the same intent with `data` (template variables): its plain path too, since session 27. */
  data: 'enqueue() of an intent with data',
} as const;
/** A variant name. */
export type EnqueueVariant = keyof typeof ENQUEUE_VARIANTS;

/** Input of the worker. */
export interface EnqueueLoadInput {
  readonly url: string;
  readonly concurrencies: readonly number[];
  readonly variants: readonly EnqueueVariant[];
  readonly rounds: number;
  readonly roundMs: number;
  readonly warmupMs: number;
}

/** Transactions per second of each round, latencies of the last round, and this process's CPU per transaction. */
export interface VariantResult {
  readonly rates: number[];
  readonly latencyMs: ReturnType<typeof latencySummary>;
  /** Microseconds of this (client) process's CPU per committed transaction, median round. */
  readonly clientCpuUsPerTx: number;
  /** Microseconds of CPU of the clients' PostgreSQL backends per transaction, median round (NaN for kysely: other backends). */
  readonly serverCpuUsPerTx: number;
}

/** Output of the worker: per concurrency, per variant. */
export type EnqueueLoadOutput = Record<string, Partial<Record<EnqueueVariant, VariantResult>>>;

// The baseline table: the columns a minimal "notification" row would have, primary key only.
const PLAIN_TABLE = `CREATE TABLE IF NOT EXISTS bench_plain_insert (
  id         text PRIMARY KEY,
  tenant_id  text NOT NULL,
  channel    text NOT NULL,
  recipient  text NOT NULL,
  body       text NOT NULL,
  created_at timestamptz NOT NULL
)`;
const PLAIN_INSERT = 'INSERT INTO bench_plain_insert (id, tenant_id, channel, recipient, body, created_at) VALUES ($1, $2, $3, $4, $5, $6)';

const INTENT: NotificationIntent = {
  tenant_id: 'bench',
  channel: 'webhook',
  to: 'http://127.0.0.1:9/hook',
  body: 'Your order has shipped.',
};

const INTENT_JSON = JSON.stringify(INTENT);
const DATA_INTENT: NotificationIntent = { ...INTENT, data: ORDER_DATA };
const SQL_FUNCTION = 'SELECT (notify_enqueue_item($1::jsonb)).created';

type Op = (client: pg.PoolClient) => Promise<void>;

const TICKS_PER_SECOND = 100; // Linux USER_HZ

/** utime + stime of processes, in microseconds (0 for one we cannot read, e.g. PostgreSQL on another host). */
function cpuOfPids(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
        .replace(/^.*\) /, '')
        .split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      return Number.NaN;
    }
  }
  return (ticks / TICKS_PER_SECOND) * 1e6;
}

/**
 * A pg-client look-alike that drops the statement name enqueue asks for, so the same SQL runs as
 * an unnamed statement (parsed and planned on every call, as before enqueue prepared it).
 */
function unnamedClient(client: pg.PoolClient) {
  return {
    async query(config: string | { text: string; values?: unknown[] }, values?: unknown[]) {
      return typeof config === 'string' ? client.query(config, values) : client.query(config.text, config.values);
    },
  };
}

async function timedLoop(
  clients: readonly pg.PoolClient[],
  backendPids: readonly number[],
  durationMs: number,
  op: Op,
): Promise<{ rate: number; latencies: number[]; cpuUsPerTx: number; serverCpuUsPerTx: number }> {
  let count = 0;
  const latencies: number[] = [];
  const server0 = cpuOfPids(backendPids);
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const end = start + durationMs;
  await Promise.all(
    clients.map(async (client) => {
      while (performance.now() < end) {
        const t = performance.now();
        await op(client);
        latencies.push(performance.now() - t);
        count++;
      }
    }),
  );
  const cpu = process.cpuUsage(cpu0);
  const serverCpu = cpuOfPids(backendPids) - server0;
  const n = Math.max(1, count);
  return {
    rate: count / ((performance.now() - start) / 1000),
    latencies,
    cpuUsPerTx: (cpu.user + cpu.system) / n,
    serverCpuUsPerTx: serverCpu / n,
  };
}

async function run(input: EnqueueLoadInput): Promise<EnqueueLoadOutput> {
  const maxClients = Math.max(...input.concurrencies);
  // One more than the load needs: the trigger switch must get a connection while every load client is checked out.
  const pool = benchPool(input.url, maxClients + 1, 'notify-bench-enqueue');
  const db = createDb({ connectionString: input.url, max: maxClients, applicationName: 'notify-bench-enqueue-kysely' });
  await pool.query(PLAIN_TABLE);

  /** BEGIN; enqueue(client, intent); COMMIT. */
  const enqueueOf =
    (intent: NotificationIntent): Op =>
    async (client) => {
      await client.query('BEGIN');
      await enqueue(client, intent);
      await client.query('COMMIT');
    };
  const enqueueOp = enqueueOf(INTENT);
  const ops: Record<EnqueueVariant, Op> = {
    plain: async (client) => {
      await client.query('BEGIN');
      await client.query(PLAIN_INSERT, [randomUUID(), INTENT.tenant_id, INTENT.channel, INTENT.to, INTENT.body, new Date()]);
      await client.query('COMMIT');
    },
    enqueue: enqueueOp,
    // Kysely has its own pool of the same size; the pg clients only set the concurrency.
    kysely: async () => {
      await db.transaction().execute((trx) => enqueue(trx, INTENT));
    },
    unprepared: async (client) => {
      await client.query('BEGIN');
      await enqueue(unnamedClient(client), INTENT);
      await client.query('COMMIT');
    },
    noTrigger: enqueueOp,
    data: enqueueOf(DATA_INTENT),
    sqlFunction: async (client) => {
      await client.query('BEGIN');
      await client.query({ name: 'bench_enqueue_item', text: SQL_FUNCTION, values: [INTENT_JSON] });
      await client.query('COMMIT');
    },
  };
  // The trigger is a table property: switch it only around the noTrigger rounds.
  const setTrigger = (on: boolean) => pool.query(`ALTER TABLE outbox ${on ? 'ENABLE' : 'DISABLE'} TRIGGER outbox_notify_insert`);

  const out: EnqueueLoadOutput = {};
  try {
    for (const c of input.concurrencies) {
      const clients = await Promise.all(Array.from({ length: c }, () => pool.connect()));
      const backendPids = await Promise.all(
        clients.map(async (cl) => (await cl.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid),
      );
      try {
        const runVariant = async (v: EnqueueVariant, ms: number) => {
          if (v === 'noTrigger') await setTrigger(false);
          try {
            return await timedLoop(clients, v === 'kysely' ? [] : backendPids, ms, ops[v]);
          } finally {
            if (v === 'noTrigger') await setTrigger(true);
          }
        };
        for (const v of input.variants) await runVariant(v, input.warmupMs);
        const rates: Partial<Record<EnqueueVariant, number[]>> = {};
        const cpu: Partial<Record<EnqueueVariant, number[]>> = {};
        const serverCpu: Partial<Record<EnqueueVariant, number[]>> = {};
        const last: Partial<Record<EnqueueVariant, number[]>> = {};
        for (let r = 0; r < input.rounds; r++) {
          // Alternate the order so slow drift (autovacuum, checkpoints, other load) hits every variant alike.
          const order = r % 2 === 0 ? [...input.variants] : [...input.variants].reverse();
          for (const v of order) {
            const { rate, latencies, cpuUsPerTx, serverCpuUsPerTx } = await runVariant(v, input.roundMs);
            (rates[v] ??= []).push(rate);
            (cpu[v] ??= []).push(cpuUsPerTx);
            (serverCpu[v] ??= []).push(v === 'kysely' ? Number.NaN : serverCpuUsPerTx);
            last[v] = latencies;
          }
        }
        const perVariant: Partial<Record<EnqueueVariant, VariantResult>> = {};
        for (const v of input.variants) {
          perVariant[v] = {
            rates: rates[v]!,
            latencyMs: latencySummary(last[v] ?? []),
            clientCpuUsPerTx: Math.round(median(cpu[v]!)),
            serverCpuUsPerTx: Math.round(median(serverCpu[v]!)),
          };
        }
        out[String(c)] = perVariant;
      } finally {
        for (const client of clients) client.release();
      }
    }
  } finally {
    await db.destroy();
    await pool.end();
  }
  return out;
}

workerMain(run);
