import { randomUUID } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import { type OfferResult, createEnqueuer, offerAtRate, pollCount, prefillNotifications, webhookIntent } from '../lib/load.js';
import { startNode } from '../lib/process.js';
import { type Receiver, startReceiver } from '../lib/receiver.js';
import type { Figure } from '../lib/report.js';
import { startNotifyService } from '../lib/service.js';
import { latencySummary, waitUntil } from '../lib/stats.js';
import type { BenchJob, PgBossWorkerInput } from '../workers/pgboss-worker.js';
import type { BenchContext, Scenario } from './types.js';

/** The shape of one system's results in this scenario. */
interface PipelineResult {
  /** Notifications from the first delivery to the last `sent` of a pre-filled backlog, per second. */
  readonly drainPerSec: number;
  readonly drainMs: number;
  /** Commit → first arrival at the receiver, at the fixed offered rate. */
  readonly latencyMs: ReturnType<typeof latencySummary>;
  readonly offered: OfferResult;
  readonly undelivered: number;
  readonly peakRssBytes: number;
  readonly timeline: readonly { atMs: number; done: number }[];
}

/** Workload sizes: the same for both systems. */
export interface E2eWorkload {
  readonly backlog: number;
  readonly rate: number;
  readonly latencyWindowMs: number;
}

export function e2eWorkload(quick: boolean): E2eWorkload {
  return { backlog: quick ? 6_000 : 30_000, rate: 1_000, latencyWindowMs: quick ? 5_000 : 20_000 };
}

/** Measures latency at `rate`: `send(n)` resolves with the id and its commit instant; the receiver sees the id. */
async function latencyAtRate(receiver: Receiver, w: E2eWorkload, send: (n: number) => Promise<{ id: string; committedAt: number }>) {
  receiver.reset();
  const committed = new Map<string, number>();
  const offered = await offerAtRate({
    rate: w.rate,
    durationMs: w.latencyWindowMs,
    maxInFlight: 64,
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
  const latencies: number[] = [];
  let undelivered = 0;
  for (const [id, at] of committed) {
    const arrived = receiver.firstDelivered.get(id);
    if (arrived === undefined) undelivered++;
    else latencies.push(arrived - at);
  }
  return { offered, latencyMs: latencySummary(latencies), undelivered };
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
      const timeline: { atMs: number; done: number }[] = [];
      const sentAt = await pollCount(pool, "SELECT count(*)::int AS n FROM notifications WHERE state = 'sent'", w.backlog, {
        timeoutMs: Math.max(120_000, w.backlog * 2),
        intervalMs: 200,
        onSample: (n, at) => timeline.push({ atMs: Math.round(at), done: n }),
      });
      const first = receiver.firstRequestAt() ?? sentAt;
      const drainMs = sentAt - first;
      ctx.log(`end-to-end/notify: drained ${w.backlog} in ${Math.round(drainMs)} ms; ${w.rate}/s for ${w.latencyWindowMs} ms`);
      const enqueuer = createEnqueuer(db.url, 16);
      let latency;
      try {
        latency = await latencyAtRate(receiver, w, (n) => enqueuer.enqueueOne(webhookIntent(receiver.url, n)));
      } finally {
        await enqueuer.close();
      }
      const peakRssBytes = await service.child.stop();
      const t = timeline[0]?.atMs ?? 0;
      return { drainPerSec: w.backlog / (drainMs / 1000), drainMs, ...latency, peakRssBytes, timeline: timeline.map((s) => ({ atMs: s.atMs - t, done: s.done })) };
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

async function runPgBoss(ctx: BenchContext, receiver: Receiver, w: E2eWorkload, settings: Omit<PgBossWorkerInput, 'connectionString' | 'queue' | 'receiverUrl'>): Promise<PipelineResult> {
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
      ...(ctx.cpuProfDir ? { nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${ctx.cpuProfDir}`, '--cpu-prof-name=e2e-pgboss-worker.cpuprofile'] } : {}),
    });
    try {
      const ready = worker.message((m): m is { type: 'ready' } => (m as { type?: string })?.type === 'ready', 60_000);
      const input: PgBossWorkerInput = { connectionString: db.url, queue: PGBOSS_QUEUE, receiverUrl: receiver.url, ...settings };
      worker.process.send(input);
      await ready;
      const timeline: { atMs: number; done: number }[] = [];
      const doneAt = await pollCount(pool, `SELECT count(*)::int AS n FROM pgboss.job WHERE name = '${PGBOSS_QUEUE}' AND state = 'completed'`, w.backlog, {
        timeoutMs: Math.max(120_000, w.backlog * 5),
        intervalMs: 200,
        onSample: (n, at) => timeline.push({ atMs: Math.round(at), done: n }),
      });
      const first = receiver.firstRequestAt() ?? doneAt;
      const drainMs = doneAt - first;
      ctx.log(`end-to-end/pg-boss: drained ${w.backlog} in ${Math.round(drainMs)} ms; ${w.rate}/s for ${w.latencyWindowMs} ms`);
      const latency = await latencyAtRate(receiver, w, async (n) => {
        const data = job(`Order ${n} has shipped.`, n);
        await boss.send(PGBOSS_QUEUE, data);
        return { id: data.id, committedAt: performance.now() };
      });
      const peakRssBytes = await worker.stop();
      const t = timeline[0]?.atMs ?? 0;
      return { drainPerSec: w.backlog / (drainMs / 1000), drainMs, ...latency, peakRssBytes, timeline: timeline.map((s) => ({ atMs: s.atMs - t, done: s.done })) };
    } finally {
      await worker.stop();
    }
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
    await pool.end();
    await db.drop();
  }
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
