import { randomUUID } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import os from 'node:os';
import { type CpuParts, type CpuPerUnit, type CpuSnapshot, cpuPerUnit, cpuSnapshot } from '../lib/cpu-meter.js';
import { type OfferResult, createEnqueuer, offerAtRate, prefillNotifications, webhookIntent } from '../lib/load.js';
import { startNode } from '../lib/process.js';
import { type Receiver, startReceiver } from '../lib/receiver.js';
import type { Figure } from '../lib/report.js';
import { startNotifyService } from '../lib/service.js';
import { type StageBreakdown, stageBreakdown } from '../lib/stages.js';
import { latencySummary, sleep, waitUntil } from '../lib/stats.js';
import type { BenchJob, PgBossWorkerInput } from '../workers/pgboss-worker.js';
import type { BenchContext, Scenario } from './types.js';

/** One system's results in this scenario. */
export interface PipelineResult {
  /** Notifications from the first delivery to the last `sent` of a pre-filled backlog, per second. */
  readonly drainPerSec: number;
  readonly drainMs: number;
  /** Commit → first arrival at the receiver, at the fixed offered rate. */
  readonly latencyMs: ReturnType<typeof latencySummary>;
  readonly offered: OfferResult;
  readonly undelivered: number;
  readonly peakRssBytes: number;
  readonly timeline: readonly { atMs: number; done: number }[];
  /** CPU per notification during the drain, by process. */
  readonly cpu: CpuPerUnit;
  /** Where the latency window's time went (notify only). */
  readonly stages?: StageBreakdown;
}

/** The result of `measureDrain`. */
export interface DrainResult {
  readonly drainMs: number;
  readonly perSec: number;
  readonly cpu: CpuPerUnit;
  readonly timeline: readonly { atMs: number; done: number }[];
}

/**
 * Polls `countSql` until it reaches `target`. The window runs from the first request the receiver
 * saw to the poll that sees `target`; CPU is metered from the first poll after the first request.
 */
export async function measureDrain(options: {
  readonly pool: pg.Pool;
  readonly countSql: string;
  readonly target: number;
  readonly receiver: Receiver;
  readonly parts: CpuParts;
  readonly timeoutMs: number;
}): Promise<DrainResult> {
  const started = performance.now();
  const timeline: { atMs: number; done: number }[] = [];
  let a: { snap: CpuSnapshot; done: number } | undefined;
  for (;;) {
    const { rows } = await options.pool.query<{ n: number }>(options.countSql);
    const at = performance.now();
    const done = rows[0]!.n;
    timeline.push({ atMs: Math.round(at - started), done });
    if (!a && options.receiver.firstRequestAt() !== undefined) a = { snap: await cpuSnapshot(options.parts), done };
    if (done >= options.target) {
      const b = await cpuSnapshot(options.parts);
      const first = options.receiver.firstRequestAt() ?? at;
      const drainMs = at - first;
      const base = a ?? { snap: b, done };
      return {
        drainMs,
        perSec: options.target / (drainMs / 1000),
        cpu: cpuPerUnit(base.snap, b, options.target - base.done, os.availableParallelism()),
        timeline,
      };
    }
    if (at - started > options.timeoutMs) throw new Error(`timed out after ${options.timeoutMs} ms: ${done} of ${options.target} done`);
    await sleep(200);
  }
}

/** Workload sizes: the same for both systems. */
export interface E2eWorkload {
  readonly backlog: number;
  readonly rate: number;
  readonly latencyWindowMs: number;
}

/** The end-to-end workload of a mode. */
export function e2eWorkload(quick: boolean): E2eWorkload {
  return { backlog: quick ? 3_000 : 30_000, rate: 1_000, latencyWindowMs: quick ? 3_000 : 20_000 };
}

/** Measures latency at `rate`: `send(n)` resolves with the id and its commit instant; the receiver sees the id. */
async function latencyAtRate(receiver: Receiver, w: E2eWorkload, send: (n: number) => Promise<{ id: string; committedAt: number }>) {
  receiver.reset();
  const committed = new Map<string, number>();
  const offered = await offerAtRate({
    rate: w.rate,
    durationMs: w.latencyWindowMs,
    maxInFlight: 128,
    op: async (n) => {
      const { id, committedAt } = await send(n);
      committed.set(id, committedAt);
    },
  });
  await waitUntil(() => [...committed.keys()].every((id) => receiver.firstDelivered.has(id)), {
    timeoutMs: 30_000,
    intervalMs: 100,
    message: 'every notification of the latency window to arrive',
  }).catch(() => {});
  // A notification that never arrived counts with the time waited so far (a lower bound), so an
  // overloaded system cannot look fast by leaving its slowest deliveries out.
  const gaveUpAt = performance.now();
  const latencies: number[] = [];
  let undelivered = 0;
  for (const [id, at] of committed) {
    const arrived = receiver.firstDelivered.get(id);
    if (arrived === undefined) undelivered++;
    latencies.push((arrived ?? gaveUpAt) - at);
  }
  return { offered, latencyMs: latencySummary(latencies), undelivered, ids: [...committed.keys()] };
}

async function runNotify(ctx: BenchContext, receiver: Receiver, w: E2eWorkload): Promise<PipelineResult> {
  const db = await ctx.stack.freshDatabase('e2e_notify');
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => {});
  try {
    const t0 = performance.now();
    await prefillNotifications(db.url, w.backlog, receiver.url);
    ctx.log(`end-to-end/notify: ${w.backlog} notifications queued in ${Math.round(performance.now() - t0)} ms; starting notify`);
    receiver.reset();
    const service = await startNotifyService({
      name: 'e2e-notify',
      databaseUrl: db.url,
      brokers: await ctx.stack.kafkaBrokers(),
      topicPrefix: ctx.stack.topicPrefix('end-to-end'),
      cpuProfDir: ctx.cpuProfDir,
    });
    try {
      const drain = await measureDrain({
        pool,
        countSql: "SELECT count(*)::int AS n FROM notifications WHERE state = 'sent'",
        target: w.backlog,
        receiver,
        parts: { service: service.child.pid, database: db.name, admin: pool, kafka: true },
        timeoutMs: Math.max(120_000, w.backlog * 2),
      });
      ctx.log(`end-to-end/notify: drained ${w.backlog} in ${Math.round(drain.drainMs)} ms; ${w.rate}/s for ${w.latencyWindowMs} ms`);
      const enqueuer = createEnqueuer(db.url, 32);
      let latency;
      try {
        latency = await latencyAtRate(receiver, w, (n) => enqueuer.enqueueOne(webhookIntent(receiver.url, n)));
      } finally {
        await enqueuer.close();
      }
      const peakRssBytes = await service.child.stop();
      const stages = await stageBreakdown(pool, receiver.firstDelivered, latency.ids);
      const { ids: _ids, ...rest } = latency;
      return { drainPerSec: drain.perSec, drainMs: drain.drainMs, ...rest, peakRssBytes, timeline: drain.timeline, cpu: drain.cpu, stages };
    } finally {
      await service.child.stop();
    }
  } finally {
    await pool.end();
    await db.drop();
  }
}

/** The pg-boss settings the scenario runs (the best of a sweep on this machine; see BENCHMARKS.md). */
export const PGBOSS_SETTINGS = { workers: 4, batchSize: 250, concurrencyPerWorker: 8, pollingIntervalSeconds: 0.5, poolSize: 10 } as const;

const PGBOSS_QUEUE = 'bench-deliver';

function job(receiverBody: string, n: number): BenchJob {
  return { id: randomUUID(), tenant_id: 'bench', body: receiverBody, data: { order: n }, created_at: new Date().toISOString() };
}

/** The peer baseline: the same backlog drain and fixed-rate latency on pg-boss 10, its worker in a child process. */
export async function runPgBoss(ctx: BenchContext, receiver: Receiver, w: E2eWorkload, settings: Omit<PgBossWorkerInput, 'connectionString' | 'queue' | 'receiverUrl'>): Promise<PipelineResult> {
  const db = await ctx.stack.freshDatabase('e2e_pgboss');
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => {});
  // The producer side: what an application would run to queue jobs. It does no maintenance.
  const boss = new PgBoss({ connectionString: db.url, max: 16, supervise: false, schedule: false, application_name: 'notify-bench-pgboss-producer' });
  boss.on('error', () => {});
  try {
    await boss.start();
    await boss.createQueue(PGBOSS_QUEUE);
    const t0 = performance.now();
    for (let i = 0; i < w.backlog; i += 1_000) {
      const chunk = Array.from({ length: Math.min(1_000, w.backlog - i) }, (_, k) => ({ name: PGBOSS_QUEUE, data: job(`Order ${i + k} has shipped.`, i + k) }));
      await boss.insert(chunk);
    }
    ctx.log(`end-to-end/pg-boss: ${w.backlog} jobs queued in ${Math.round(performance.now() - t0)} ms; starting the worker`);
    receiver.reset();
    const worker = startNode({
      name: 'e2e-pgboss-worker',
      script: 'bench/workers/pgboss-worker.ts',
      ipc: true,
      profileDir: ctx.cpuProfDir,
    });
    try {
      const ready = worker.message((m): m is { type: 'ready' } => (m as { type?: string })?.type === 'ready', 60_000);
      const input: PgBossWorkerInput = { connectionString: db.url, queue: PGBOSS_QUEUE, receiverUrl: receiver.url, ...settings };
      worker.process.send(input);
      await ready;
      const drain = await measureDrain({
        pool,
        countSql: `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${PGBOSS_QUEUE}' AND state = 'completed'`,
        target: w.backlog,
        receiver,
        parts: { service: worker.pid, database: db.name, admin: pool },
        timeoutMs: Math.max(120_000, w.backlog * 5),
      });
      ctx.log(`end-to-end/pg-boss: drained ${w.backlog} in ${Math.round(drain.drainMs)} ms; ${w.rate}/s for ${w.latencyWindowMs} ms`);
      const latency = await latencyAtRate(receiver, w, async (n) => {
        const data = job(`Order ${n} has shipped.`, n);
        await boss.send(PGBOSS_QUEUE, data);
        return { id: data.id, committedAt: performance.now() };
      });
      const peakRssBytes = await worker.stop();
      const { ids: _ids, ...rest } = latency;
      return { drainPerSec: drain.perSec, drainMs: drain.drainMs, ...rest, peakRssBytes, timeline: drain.timeline, cpu: drain.cpu };
    } finally {
      await worker.stop();
    }
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
    await pool.end();
    await db.drop();
  }
}

/** The p99 of each latency stage as a figure (p50 in the note). */
export function stageFigures(stages: StageBreakdown | undefined, where: string): Figure[] {
  if (!stages || stages.count === 0) return [];
  const f = (id: string, label: string, s: StageBreakdown['enqueueToPublished']): Figure => ({
    id: `stage.${id}`,
    label: `stage p99 ${where}: ${label}`,
    value: s.p99,
    unit: 'ms',
    note: `p50 ${Math.round(s.p50)} ms`,
  });
  return [
    f('relay', 'enqueue → published to Kafka', stages.enqueueToPublished),
    f('consume', 'published → attempt started', stages.publishedToAttempt),
    f('send', 'attempt started → arrived', stages.attemptToArrival),
  ];
}

/**
 * Enqueue → Kafka → dispatcher → webhook → `sent`, through the real `notify start` (all roles in
 * one child process) and a local no-op HTTP receiver in this process.
 * 1. Throughput: a pre-filled backlog drained, from the first arrival at the receiver to the
 *    poll that sees every notification `sent` (service start-up excluded).
 * 2. Latency: on the same warm service, 1,000 single-row enqueue transactions per second; each
 *    notification's COMMIT returning → its first arrival at the receiver.
 * The same workload on pg-boss 10 (a worker process that POSTs each job to the same receiver)
 * is the peer baseline.
 */
export const endToEndScenario: Scenario = {
  name: 'end-to-end',
  description: 'enqueue → sent through notify start and a local receiver: backlog drain rate and p50/p99 at 1,000/s, vs pg-boss',
  needsKafka: true,
  async run(ctx) {
    const w = e2eWorkload(ctx.quick);
    const receiver = await startReceiver();
    try {
      const ours = await runNotify(ctx, receiver, w);
      const peer = await runPgBoss(ctx, receiver, w, PGBOSS_SETTINGS);
      const quickNote = ctx.quick ? `quick mode: ${w.backlog} backlog, ${w.latencyWindowMs / 1000} s window` : undefined;
      const figures: Figure[] = [
        {
          id: 'throughput',
          label: 'notifications/s enqueue → sent (backlog drain)',
          value: ours.drainPerSec,
          unit: '/s',
          baseline: { label: 'pg-boss', value: peer.drainPerSec },
          targets: [
            { on: 'value', op: '>=', value: 3_000 },
            { on: 'ratio', op: '>=', value: 3 },
          ],
          ...(quickNote ? { note: quickNote } : {}),
        },
        {
          id: 'p50',
          label: `commit → delivery p50 at ${w.rate}/s`,
          value: ours.latencyMs.p50,
          unit: 'ms',
          baseline: { label: 'pg-boss', value: peer.latencyMs.p50 },
        },
        {
          id: 'p99',
          label: `commit → delivery p99 at ${w.rate}/s`,
          value: ours.latencyMs.p99,
          unit: 'ms',
          baseline: { label: 'pg-boss', value: peer.latencyMs.p99 },
          targets: [{ on: 'value', op: '<=', value: 100 }],
          note: `offered ${Math.round(ours.offered.achievedRate)}/s to notify, ${Math.round(peer.offered.achievedRate)}/s to pg-boss; undelivered ${ours.undelivered} / ${peer.undelivered}`,
        },
        ...stageFigures(ours.stages, `at ${w.rate}/s`),
        {
          id: 'cpu.total',
          label: 'CPU ms per notification, all processes (drain)',
          value: ours.cpu.totalMs,
          unit: 'ms',
          baseline: { label: 'pg-boss', value: peer.cpu.totalMs },
          note: 'service + PostgreSQL backends + Kafka broker (shared) + load generator/receiver',
        },
        { id: 'cpu.service', label: 'CPU ms per notification, service process', value: ours.cpu.serviceMs, unit: 'ms', baseline: { label: 'pg-boss worker', value: peer.cpu.serviceMs } },
        { id: 'cpu.postgres', label: 'CPU ms per notification, PostgreSQL backends', value: ours.cpu.postgresMs, unit: 'ms', baseline: { label: 'pg-boss', value: peer.cpu.postgresMs } },
        ...(ours.cpu.kafkaMs !== undefined ? [{ id: 'cpu.kafka', label: 'CPU ms per notification, Kafka broker (shared)', value: ours.cpu.kafkaMs, unit: 'ms' }] : []),
        { id: 'db.commits', label: 'PostgreSQL commits per notification', value: ours.cpu.commits, unit: '', baseline: { label: 'pg-boss', value: peer.cpu.commits } },
        { id: 'db.rows', label: 'rows written per notification', value: ours.cpu.rowsWritten, unit: '', baseline: { label: 'pg-boss', value: peer.cpu.rowsWritten } },
      ];
      return {
        figures,
        peakRss: { 'notify start (all roles)': ours.peakRssBytes, 'pg-boss worker': peer.peakRssBytes },
        details: { workload: w, pgboss: PGBOSS_SETTINGS, notify: ours, pgbossResult: peer },
      };
    } finally {
      await receiver.close();
    }
  },
};
