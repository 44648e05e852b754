import type pg from 'pg';
import PgBoss from 'pg-boss';
import os from 'node:os';
import { type CpuParts, type CpuPerUnit, type CpuSnapshot, cpuPerUnit, cpuSnapshot } from '../lib/cpu-meter.js';
import { type OfferResult, offerAtRate, pgBossJob, prefillAtOnce, prefillNotifications } from '../lib/load.js';
import { startNode } from '../lib/process.js';
import { type Receiver, startReceiver } from '../lib/receiver.js';
import { runWorker } from '../lib/worker.js';
import type { Figure } from '../lib/report.js';
import { startNotifyService } from '../lib/service.js';
import { type StageBreakdown, stageBreakdown } from '../lib/stages.js';
import { latencySummary, loadSpanMs, median, pairedRatio, percentile, sleep, waitUntil, withLoopDelay } from '../lib/stats.js';
import type { LatencyLoadInput, LatencyLoadOutput } from '../workers/latency-load.js';
import type { PgBossWorkerInput } from '../workers/pgboss-worker.js';
import type { BenchContext, Scenario } from './types.js';
import { benchPool } from '../lib/pool.js';

/** Commit → first arrival at the receiver at one offered rate. */
interface LatencyPoint {
  readonly rate: number;
  readonly latencyMs: ReturnType<typeof latencySummary>;
  /** p99 of each consecutive 10-s slice of the measured span, by commit instant (the spread within the window). */
  readonly sliceP99Ms: readonly number[];
  readonly offered: OfferResult;
  readonly undelivered: number;
  /** Where the window's time went (notify only). */
  readonly stages?: StageBreakdown;
  /** Event-loop delay (ms) of the load generator's process and of the receiving bench process over the window. */
  readonly loopDelayMs?: { readonly generator: LatencyLoadOutput['loopDelayMs']; readonly receiver: LatencyLoadOutput['loopDelayMs'] };
  /**
   * CPU ms per delivered notification over the window (from the generator's start to the last
   * arrival). Its PostgreSQL part includes the generator's own enqueue transactions; the service
   * part is the service process alone (what a steady trickle costs it, batching being thinner
   * than in a drain).
   */
  readonly cpu?: CpuPerUnit;
}

/** A log line of one latency window: offered vs target rate and both processes' event-loop delay. */
function loadLine(
  system: string,
  p: Required<Pick<LatencyPoint, 'rate' | 'offered' | 'latencyMs' | 'sliceP99Ms' | 'loopDelayMs'>>,
): string {
  const d = p.loopDelayMs;
  return (
    `end-to-end/${system}: ${p.rate}/s offered ${Math.round(p.offered.achievedRate)}/s (${p.offered.stalls} stalls), p50 ${Math.round(p.latencyMs.p50)} p99 ${Math.round(p.latencyMs.p99)} ms ` +
    `(10-s slices: ${p.sliceP99Ms.map(Math.round).join(', ')} ms); ` +
    `loop delay p99/max: generator ${d.generator.p99.toFixed(1)}/${d.generator.max.toFixed(1)} ms, receiver ${d.receiver.p99.toFixed(1)}/${d.receiver.max.toFixed(1)} ms`
  );
}

/** One system's results in one round of this scenario. */
export interface PipelineResult {
  /** Notifications from the first delivery to the last `sent` of a pre-filled backlog, per second. */
  readonly drainPerSec: number;
  readonly drainMs: number;
  /** Latency at each offered rate (measured in the first round of each system only). */
  readonly latency: readonly LatencyPoint[];
  readonly peakRssBytes: number;
  readonly timeline: readonly { atMs: number; done: number }[];
  /** CPU per notification during the drain, by process. */
  readonly cpu: CpuPerUnit;
  /**
   * The same backlog drained again by the same, now warm, process right after the measured
   * (cold) drain: queued in one transaction (notify) or one insert (pg-boss), so it appears at once.
   */
  readonly warm: DrainResult;
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
  /** Offered rates of the latency windows (each its own window, lowest first). */
  readonly rates: readonly number[];
  readonly latencyWindowMs: number;
  /** Drain rounds per system, run in pairs A B, B A, … (the ratio is the median of per-pair ratios). */
  readonly pairs: number;
}

/**
 * The end-to-end workload of a mode. A full run drains in 3 pairs, an odd number, so that the
 * median of the per-pair ratios and the median round (the CPU figures) are a middle value: with
 * 2 pairs the nearest-rank median was the lower of the two, so the drain ratio reported was the
 * worse pair's and the CPU figures the slower round's (session 25 measured pairs 1.03 and 0.74 in
 * one run, and reported 0.74). A full run's latency windows measure 30 s at each rate (15,000
 * notifications at 500/s): a 10-s window's p99 (its 50th slowest at 500/s, its 10th at 100/s) was
 * decided by whether one episode of a saturated machine fell in it (session 36: 10-s windows of one
 * code at 500/s read 77-244 ms); each 10-s slice's p99 is reported next to the window's.
 */
export function e2eWorkload(quick: boolean): E2eWorkload {
  return { backlog: quick ? 3_000 : 10_000, rates: [100, 500, 1_000], latencyWindowMs: quick ? 3_000 : 30_000, pairs: quick ? 1 : 3 };
}

/**
 * Measures latency at `rate`: `send(n)` resolves with the id and its commit instant; the receiver
 * sees the id. `afterOffer` runs once offering is over, before waiting for the arrivals.
 * The load runs on this process's event loop (end-to-end uses `latencyFromLoadProcess` instead).
 */
export async function latencyAtRate(
  receiver: Receiver,
  rate: number,
  windowMs: number,
  send: (n: number) => Promise<{ id: string; committedAt: number }>,
  options: { maxInFlight?: number; waitMs?: number; afterOffer?: () => Promise<void> } = {},
) {
  receiver.reset();
  const committed = new Map<string, number>();
  let offered: OfferResult;
  try {
    offered = await offerAtRate({
      rate,
      durationMs: windowMs,
      maxInFlight: options.maxInFlight ?? 128,
      op: async (n) => {
        const { id, committedAt } = await send(n);
        committed.set(id, committedAt);
      },
    });
  } finally {
    await options.afterOffer?.();
  }
  return { rate, offered, ...(await arrivals(receiver, committed, options.waitMs)) };
}

/**
 * Waits for every committed id to arrive and summarises commit → first arrival. `committed` holds
 * commit instants on this process's performance.now() clock, as the receiver's arrivals are.
 */
async function arrivals(receiver: Receiver, committed: ReadonlyMap<string, number>, waitMs = 30_000, unmeasured: readonly string[] = []) {
  const awaited = [...committed.keys(), ...unmeasured];
  await waitUntil(() => awaited.every((id) => receiver.firstDelivered.has(id)), {
    timeoutMs: waitMs,
    intervalMs: 100,
    message: 'every notification of the latency window to arrive',
  }).catch(() => {});
  // A notification that never arrived counts with the time waited so far (a lower bound), so an
  // overloaded system cannot look fast by leaving its slowest deliveries out.
  const gaveUpAt = performance.now();
  const latencies: number[] = [];
  const slices: number[][] = [];
  let start = Infinity; // a loop, not Math.min(...): a 30-s window at 1,000/s commits ~30,000
  for (const at of committed.values()) start = Math.min(start, at);
  let undelivered = 0;
  for (const [id, at] of committed) {
    const arrived = receiver.firstDelivered.get(id);
    if (arrived === undefined) undelivered++;
    const latency = (arrived ?? gaveUpAt) - at;
    latencies.push(latency);
    (slices[Math.floor((at - start) / SLICE_MS)] ??= []).push(latency);
  }
  // A last slice shorter than half a slice is folded into the one before (offers end on the span's last tick).
  if (slices.length > 1 && slices.at(-1)!.length < slices.at(-2)!.length / 2) slices.at(-2)!.push(...slices.pop()!);
  const sliceP99Ms = slices.filter((x) => x.length > 0).map((x) => percentile(x, 0.99));
  // Every notification of the window that arrived, the lead's included: what its CPU is divided by.
  const delivered = committed.size - undelivered + unmeasured.filter((id) => receiver.firstDelivered.has(id)).length;
  return { latencyMs: latencySummary(latencies), sliceP99Ms, undelivered, delivered, ids: [...committed.keys()], committed };
}

/**
 * Steady load around each measured span (bench/workers/latency-load.ts): the generator offers at
 * the same rate this long before the span and after it, and neither part is measured, so the span
 * sees neither the generator's start nor its stop. Traced (session 36, 10-s windows at 500/s):
 * with no lead the slowest 1 % of a window clustered in its first second and its last 250 ms,
 * where the relay's claims took 130-220 ms while the generator started or stopped; p99-probe's
 * medians, 8 alternating pairs: 158 ms without the lead, 103 ms with it.
 */
const LEAD_IN_MS = 2_000;
const LEAD_OUT_MS = 1_000;

/** Each latency window also reports the p99 of each slice this long (`sliceP99Ms`). */
const SLICE_MS = 10_000;

/**
 * One window of bench/workers/latency-load.ts (its own process, 128 transactions in flight) at
 * `input.rate`, delivering to `receiver`, which the caller resets first: the worker's output and
 * its notifications' arrivals (the measured span's; the lead-in's and lead-out's are awaited too,
 * and counted in `delivered`). The worker's commit instants are wall-clock ms
 * (performance.timeOrigin + now); they are moved onto this process's performance.now() clock to
 * compare with the arrivals.
 */
export async function loadWindow(name: string, receiver: Receiver, input: Omit<LatencyLoadInput, 'receiverUrl' | 'maxInFlight'>) {
  const full: LatencyLoadInput = { leadInMs: LEAD_IN_MS, leadOutMs: LEAD_OUT_MS, ...input, receiverUrl: receiver.url, maxInFlight: 128 };
  const { output } = await runWorker<LatencyLoadInput, LatencyLoadOutput>(name, 'bench/workers/latency-load.ts', full, {
    timeoutMs: loadSpanMs(full) + 120_000,
  });
  const committed = new Map(output.committed.map(([id, wall]) => [id, wall - performance.timeOrigin]));
  return { output, result: await arrivals(receiver, committed, undefined, output.unmeasured) };
}

/**
 * Latency at `rate` with the load generated by bench/workers/latency-load.ts in its own process
 * (own event loop, own pg pool): this process only receives and polls. The worker's commit
 * instants are wall-clock ms (performance.timeOrigin + now); they are moved onto this process's
 * performance.now() clock (minus this process's timeOrigin) to compare with the arrivals.
 */
async function latencyFromLoadProcess(receiver: Receiver, input: Omit<LatencyLoadInput, 'receiverUrl' | 'maxInFlight'>, parts: CpuParts) {
  receiver.reset();
  const before = await cpuSnapshot(parts);
  const {
    result: { output, result },
    loopDelayMs,
  } = await withLoopDelay(() => loadWindow(`e2e-load-${input.system}-${input.rate}`, receiver, input));
  // The CPU window spans the lead-in and lead-out too: per notification delivered in all of it.
  const cpu = cpuPerUnit(before, await cpuSnapshot(parts), result.delivered, os.availableParallelism());
  return {
    rate: input.rate,
    offered: output.offered,
    ...result,
    loopDelayMs: { generator: output.loopDelayMs, receiver: loopDelayMs },
    cpu,
  };
}

async function runNotify(ctx: BenchContext, receiver: Receiver, w: E2eWorkload, round: number): Promise<PipelineResult> {
  const db = await ctx.stack.freshDatabase('e2e_notify');
  const pool = benchPool(db.url, 2);
  try {
    // The backlog is queued before notify start runs, which is what publishes NOTIFY_EVENTS to
    // notify_settings for every enqueuer: publish it first, so the backlog follows the policy too.
    await pool.query('UPDATE notify_settings SET events = $1', [ctx.serviceEnv?.NOTIFY_EVENTS ?? 'all']);
    const t0 = performance.now();
    await prefillNotifications(db.url, w.backlog, receiver.url);
    ctx.log(`end-to-end/notify: ${w.backlog} notifications queued in ${Math.round(performance.now() - t0)} ms; starting notify`);
    receiver.reset();
    const service = await startNotifyService({
      name: 'e2e-notify',
      databaseUrl: db.url,
      brokers: await ctx.stack.kafkaBrokers(),
      topicPrefix: ctx.stack.topicPrefix('end-to-end'),
      cpuProfDir: round === 0 ? ctx.cpuProfDir : undefined,
      ...(ctx.serviceEnv ? { env: ctx.serviceEnv } : {}),
    });
    // The processes whose CPU every window of this service counts: both drains and the latency windows.
    const parts: CpuParts = { service: service.child.pid, database: db.name, admin: pool, kafka: true };
    try {
      const drain = await measureDrain({
        pool,
        countSql: "SELECT count(*)::int AS n FROM notifications WHERE state = 'sent'",
        target: w.backlog,
        receiver,
        parts,
        timeoutMs: Math.max(120_000, w.backlog * 20), // a busy shared machine drained at ~150/s
      });
      ctx.log(
        `end-to-end/notify round ${round + 1}: drained ${w.backlog} in ${Math.round(drain.drainMs)} ms (${Math.round(drain.perSec)}/s)`,
      );
      // Reset before queueing: a delivery between the COMMIT and the reset would start the window late.
      receiver.reset();
      await prefillAtOnce(db.url, w.backlog, receiver.url, w.backlog);
      const warm = await measureDrain({
        pool,
        countSql: `SELECT count(*)::int - ${w.backlog} AS n FROM notifications WHERE state = 'sent'`,
        target: w.backlog,
        receiver,
        parts,
        timeoutMs: Math.max(120_000, w.backlog * 20),
      });
      ctx.log(
        `end-to-end/notify round ${round + 1}, warm: drained ${w.backlog} in ${Math.round(warm.drainMs)} ms (${Math.round(warm.perSec)}/s)`,
      );
      const latency: LatencyPoint[] = [];
      if (round === 0) {
        await vacuumAfterDrains(pool);
        for (const rate of w.rates) {
          ctx.log(`end-to-end/notify: ${rate}/s for ${w.latencyWindowMs} ms`);
          const { ids, committed, ...point } = await latencyFromLoadProcess(
            receiver,
            {
              system: 'notify',
              url: db.url,
              rate,
              durationMs: w.latencyWindowMs,
            },
            parts,
          );
          ctx.log(loadLine('notify', point));
          latency.push({ ...point, stages: await stageBreakdown(pool, receiver.firstDelivered, ids) });
          if (process.env.BENCH_TRACE_DIR) await dumpRows(pool, process.env.BENCH_TRACE_DIR, rate, committed, receiver.firstDelivered);
        }
      }
      const peakRssBytes = await service.child.stop();
      return { drainPerSec: drain.perSec, drainMs: drain.drainMs, latency, peakRssBytes, timeline: drain.timeline, cpu: drain.cpu, warm };
    } finally {
      await service.child.stop();
    }
  } finally {
    await pool.end();
    await db.drop();
  }
}

/**
 * Tracing aid (BENCH_TRACE_DIR set): one JSON line per notification of a latency window with its
 * outbox row id, created_at, the bench's commit instant, published_at (from the relay's record in
 * outbox_published; the row itself, with its txid, is gone once published), attempt start and arrival
 * (wall-clock milliseconds), for joining with the relay's trace (NOTIFY_RELAY_TRACE).
 */
async function dumpRows(
  pool: pg.Pool,
  dir: string,
  rate: number,
  committed: ReadonlyMap<string, number>,
  arrivals: ReadonlyMap<string, number>,
): Promise<void> {
  const { rows } = await pool.query<{ id: string; oid: string; c: number; p: number | null; s: number | null }>(
    `SELECT n.id, o.outbox_id::text AS oid, extract(epoch FROM n.created_at) * 1000 AS c,
            extract(epoch FROM o.published_at) * 1000 AS p, extract(epoch FROM a.started_at) * 1000 AS s
       FROM notifications n
       JOIN outbox_published o ON o.topic = 'requests' AND o.notification_id = n.id
       LEFT JOIN attempts a ON a.notification_id = n.id AND a.attempt = 1
      WHERE n.id = ANY($1::text[])`,
    [[...committed.keys()]],
  );
  const { writeFileSync } = await import('node:fs');
  const lines = rows.map((r) => {
    const at = committed.get(r.id);
    const arrived = arrivals.get(r.id);
    return JSON.stringify({
      ...r,
      commit: at === undefined ? null : performance.timeOrigin + at,
      arrive: arrived === undefined ? null : performance.timeOrigin + arrived,
    });
  });
  writeFileSync(`${dir}/rows-${rate}.jsonl`, lines.join('\n') + '\n');
}

/**
 * VACUUM ANALYZE of the round's database between the drains and the latency windows, the same for
 * both systems: the drains leave 2 × backlog updated rows (dead tuples) and this machine's
 * PostgreSQL runs with autovacuum off, where a deployment's autovacuum would have processed them.
 */
async function vacuumAfterDrains(pool: pg.Pool): Promise<void> {
  await pool.query('VACUUM ANALYZE');
}

/** The pg-boss settings the scenario runs (the best of a sweep on this machine; see BENCHMARKS.md). */
const PGBOSS_SETTINGS = { workers: 4, batchSize: 250, concurrencyPerWorker: 8, pollingIntervalSeconds: 0.5, poolSize: 10 } as const;

const PGBOSS_QUEUE = 'bench-deliver';

/** The peer baseline: the same backlog drain and fixed-rate latency on pg-boss 10, its worker in a child process. */
export async function runPgBoss(
  ctx: BenchContext,
  receiver: Receiver,
  w: E2eWorkload,
  settings: Omit<PgBossWorkerInput, 'connectionString' | 'queue' | 'receiverUrl'>,
  round = 0,
): Promise<PipelineResult> {
  const db = await ctx.stack.freshDatabase('e2e_pgboss');
  const pool = benchPool(db.url, 2);
  // The producer side: what an application would run to queue jobs. It does no maintenance.
  const boss = new PgBoss({
    connectionString: db.url,
    max: 16,
    supervise: false,
    schedule: false,
    application_name: 'notify-bench-pgboss-producer',
  });
  boss.on('error', () => {});
  try {
    await boss.start();
    await boss.createQueue(PGBOSS_QUEUE);
    const t0 = performance.now();
    for (let i = 0; i < w.backlog; i += 1_000) {
      const chunk = Array.from({ length: Math.min(1_000, w.backlog - i) }, (_, k) => ({
        name: PGBOSS_QUEUE,
        data: pgBossJob(i + k),
      }));
      await boss.insert(chunk);
    }
    ctx.log(`end-to-end/pg-boss: ${w.backlog} jobs queued in ${Math.round(performance.now() - t0)} ms; starting the worker`);
    receiver.reset();
    const worker = startNode({
      name: 'e2e-pgboss-worker',
      script: 'bench/workers/pgboss-worker.ts',
      ipc: true,
      profileDir: round === 0 ? ctx.cpuProfDir : undefined,
    });
    const parts: CpuParts = { service: worker.pid, database: db.name, admin: pool };
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
        parts,
        timeoutMs: Math.max(120_000, w.backlog * 5),
      });
      ctx.log(
        `end-to-end/pg-boss round ${round + 1}: drained ${w.backlog} in ${Math.round(drain.drainMs)} ms (${Math.round(drain.perSec)}/s)`,
      );
      receiver.reset();
      await boss.insert(
        Array.from({ length: w.backlog }, (_, k) => ({
          name: PGBOSS_QUEUE,
          data: pgBossJob(w.backlog + k),
        })),
      );
      const warm = await measureDrain({
        pool,
        countSql: `SELECT count(*)::int - ${w.backlog} AS n FROM pgboss.job WHERE name = '${PGBOSS_QUEUE}' AND state = 'completed'`,
        target: w.backlog,
        receiver,
        parts,
        timeoutMs: Math.max(120_000, w.backlog * 5),
      });
      ctx.log(
        `end-to-end/pg-boss round ${round + 1}, warm: drained ${w.backlog} in ${Math.round(warm.drainMs)} ms (${Math.round(warm.perSec)}/s)`,
      );
      const latency: LatencyPoint[] = [];
      if (round === 0) {
        await vacuumAfterDrains(pool);
        for (const rate of w.rates) {
          ctx.log(`end-to-end/pg-boss: ${rate}/s for ${w.latencyWindowMs} ms`);
          const {
            ids: _ids,
            committed: _committed,
            ...point
          } = await latencyFromLoadProcess(
            receiver,
            {
              system: 'pg-boss',
              url: db.url,
              queue: PGBOSS_QUEUE,
              rate,
              durationMs: w.latencyWindowMs,
            },
            parts,
          );
          ctx.log(loadLine('pg-boss', point));
          latency.push(point);
        }
      }
      const peakRssBytes = await worker.stop();
      return { drainPerSec: drain.perSec, drainMs: drain.drainMs, latency, peakRssBytes, timeline: drain.timeline, cpu: drain.cpu, warm };
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

/** The round whose CPU split is reported: the median drain rate (the odd one out of a pair would skew it); `rate` picks the drain. */
function medianRound(rounds: readonly PipelineResult[], rate: (r: PipelineResult) => number = (r) => r.drainPerSec): PipelineResult {
  const sorted = [...rounds].sort((a, b) => rate(a) - rate(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

/**
 * The warm drain's figures, next to the cold ones above (no targets: the issue's targets are on
 * the cold drain): throughput as a paired ratio, and the CPU split of the median warm round.
 */
function warmFigures(ours: readonly PipelineResult[], peer: readonly PipelineResult[]): Figure[] {
  const rate = (r: PipelineResult) => r.warm.perSec;
  const o = medianRound(ours, rate).warm.cpu;
  const p = medianRound(peer, rate).warm.cpu;
  const note = 'the same backlog again on the same process right after the measured drain, queued at once (one transaction / one insert)';
  return [
    {
      id: 'throughput.warm',
      label: 'notifications/s enqueue → sent, warm process (second backlog)',
      value: median(ours.map(rate)),
      unit: '/s',
      baseline: { label: 'pg-boss', value: median(peer.map(rate)) },
      ratio: pairedRatio(ours.map(rate), peer.map(rate)),
      note: `${note}; per-round ratios ${ours.map((r, i) => (rate(r) / rate(peer[i]!)).toFixed(2)).join(', ')}`,
    },
    {
      id: 'cpu.total.warm',
      label: 'CPU ms per notification, all processes (warm drain)',
      value: o.totalMs,
      unit: 'ms',
      baseline: { label: 'pg-boss', value: p.totalMs },
    },
    {
      id: 'cpu.service.warm',
      label: 'CPU ms per notification, service process (warm drain)',
      value: o.serviceMs,
      unit: 'ms',
      baseline: { label: 'pg-boss worker', value: p.serviceMs },
    },
    {
      id: 'cpu.postgres.warm',
      label: 'CPU ms per notification, PostgreSQL backends (warm drain)',
      value: o.postgresMs,
      unit: 'ms',
      baseline: { label: 'pg-boss', value: p.postgresMs },
    },
  ];
}

/** Drain rounds of both systems in pairs A B, B A, … (a slow stretch of the shared machine hits both sides of a pair). */
async function pairedRounds(ctx: BenchContext, receiver: Receiver, w: E2eWorkload) {
  const ours: PipelineResult[] = [];
  const peer: PipelineResult[] = [];
  for (let i = 0; i < w.pairs; i++) {
    const runOurs = async () => ours.push(await runNotify(ctx, receiver, w, i));
    const runPeer = async () => peer.push(await runPgBoss(ctx, receiver, w, PGBOSS_SETTINGS, i));
    if (i % 2 === 0) {
      await runOurs();
      await runPeer();
    } else {
      await runPeer();
      await runOurs();
    }
  }
  return { ours, peer };
}

/** The figures of one latency load point, ours against pg-boss's at the same offered rate. */
function latencyFigures(ours: LatencyPoint, peer: LatencyPoint | undefined, targetP99Ms: number | undefined): Figure[] {
  const at = `at ${ours.rate}/s`;
  return [
    {
      id: `p50.${ours.rate}`,
      label: `commit → delivery p50 ${at}`,
      value: ours.latencyMs.p50,
      unit: 'ms',
      ...(peer ? { baseline: { label: 'pg-boss', value: peer.latencyMs.p50 } } : {}),
    },
    {
      id: `p99.${ours.rate}`,
      label: `commit → delivery p99 ${at}`,
      value: ours.latencyMs.p99,
      unit: 'ms',
      ...(peer ? { baseline: { label: 'pg-boss', value: peer.latencyMs.p99 } } : {}),
      ...(targetP99Ms !== undefined ? { targets: [{ on: 'value' as const, op: '<=' as const, value: targetP99Ms }] } : {}),
      note:
        `offered ${Math.round(ours.offered.achievedRate)}/s to notify${peer ? `, ${Math.round(peer.offered.achievedRate)}/s to pg-boss` : ''}; undelivered ${ours.undelivered}${peer ? ` / ${peer.undelivered}` : ''}; ` +
        `p99 of each 10-s slice ${ours.sliceP99Ms.map(Math.round).join(', ')} ms${peer ? ` / ${peer.sliceP99Ms.map(Math.round).join(', ')} ms` : ''}`,
    },
    ...(ours.cpu
      ? [
          {
            id: `cpu.service.${ours.rate}`,
            label: `CPU ms per notification, service process, ${at} (steady trickle)`,
            value: ours.cpu.serviceMs,
            unit: 'ms',
            ...(peer?.cpu ? { baseline: { label: 'pg-boss worker', value: peer.cpu.serviceMs } } : {}),
          },
        ]
      : []),
    ...stageFigures(ours.stages, at),
  ];
}

/**
 * Enqueue → Kafka → dispatcher → webhook → `sent`, through the real `notify start` (all roles in
 * one child process) and a local no-op HTTP receiver in this process.
 * 1. Throughput: a pre-filled backlog drained, from the first arrival at the receiver to the
 *    poll that sees every notification `sent` (service start-up excluded), in paired rounds with
 *    pg-boss; the ratio is the median of the per-pair ratios.
 *    Then, on the same process, a second backlog of the same size queued at once and drained the
 *    same way (the warm drain: JIT compilation done), reported next to the cold figures.
 * 2. Latency: on the first round's warm service, single-row enqueue transactions at 100, 500 and
 *    1,000 per second; each notification's COMMIT returning → its first arrival at the receiver,
 *    for the transactions of a measured span inside a steady load (2 s of it before, 1 s after:
 *    `LEAD_IN_MS`, `LEAD_OUT_MS`).
 * The same workload on pg-boss 10 (a worker process that POSTs each job to the same receiver)
 * is the peer baseline.
 */
export const endToEndScenario: Scenario = {
  name: 'end-to-end',
  description:
    'enqueue → sent through notify start and a local receiver: backlog drain vs pg-boss in paired rounds, p50/p99 at 100/500/1,000 per s',
  needsKafka: true,
  async run(ctx) {
    const w = e2eWorkload(ctx.quick);
    const receiver = await startReceiver();
    try {
      const { ours, peer } = await pairedRounds(ctx, receiver, w);
      const drainRatio = pairedRatio(
        ours.map((r) => r.drainPerSec),
        peer.map((r) => r.drainPerSec),
      );
      const o = medianRound(ours);
      const p = medianRound(peer);
      const quickNote = ctx.quick ? `quick mode: ${w.backlog} backlog, ${w.latencyWindowMs / 1000} s windows, ${w.pairs} pair` : undefined;
      const figures: Figure[] = [
        {
          id: 'throughput',
          label: 'notifications/s enqueue → sent (backlog drain)',
          value: median(ours.map((r) => r.drainPerSec)),
          unit: '/s',
          baseline: { label: 'pg-boss', value: median(peer.map((r) => r.drainPerSec)) },
          ratio: drainRatio,
          targets: [{ on: 'ratio', op: '>=', value: 1 }],
          note: `${w.pairs} paired rounds, per-round ratios ${ours.map((r, i) => (r.drainPerSec / peer[i]!.drainPerSec).toFixed(2)).join(', ')}; stretch ≥ 1.5×${quickNote ? `; ${quickNote}` : ''}`,
        },
        ...ours[0]!.latency.flatMap((point) =>
          latencyFigures(
            point,
            peer[0]!.latency.find((q) => q.rate === point.rate),
            point.rate === 500 ? 100 : undefined,
          ),
        ),
        {
          id: 'cpu.total',
          label: 'CPU ms per notification, all processes (drain)',
          value: o.cpu.totalMs,
          unit: 'ms',
          baseline: { label: 'pg-boss', value: p.cpu.totalMs },
          targets: [{ on: 'value', op: '<=', value: 0.5 }],
          note: 'service + PostgreSQL backends + Kafka broker (shared) + load generator/receiver; the median round of each',
        },
        {
          id: 'cpu.service',
          label: 'CPU ms per notification, service process',
          value: o.cpu.serviceMs,
          unit: 'ms',
          baseline: { label: 'pg-boss worker', value: p.cpu.serviceMs },
          targets: [{ on: 'value', op: '<=', value: 0.25 }],
        },
        {
          id: 'cpu.postgres',
          label: 'CPU ms per notification, PostgreSQL backends',
          value: o.cpu.postgresMs,
          unit: 'ms',
          baseline: { label: 'pg-boss', value: p.cpu.postgresMs },
        },
        ...(o.cpu.kafkaMs !== undefined
          ? [{ id: 'cpu.kafka', label: 'CPU ms per notification, Kafka broker (shared)', value: o.cpu.kafkaMs, unit: 'ms' }]
          : []),
        ...warmFigures(ours, peer),
        {
          id: 'db.commits',
          label: 'PostgreSQL commits per notification',
          value: o.cpu.commits,
          unit: '',
          baseline: { label: 'pg-boss', value: p.cpu.commits },
        },
        {
          id: 'db.rows',
          label: 'rows written per notification',
          value: o.cpu.rowsWritten,
          unit: '',
          baseline: { label: 'pg-boss', value: p.cpu.rowsWritten },
        },
        {
          id: 'db.wal',
          label: 'WAL bytes per notification (server-wide)',
          value: o.cpu.walBytes,
          unit: 'B',
          baseline: { label: 'pg-boss', value: p.cpu.walBytes },
          note: 'pg_stat_wal over the drain window: row versions, index entries and full-page images together',
        },
      ];
      return {
        figures,
        peakRss: {
          'notify start (all roles)': Math.max(...ours.map((r) => r.peakRssBytes)),
          'pg-boss worker': Math.max(...peer.map((r) => r.peakRssBytes)),
        },
        details: { workload: w, pgboss: PGBOSS_SETTINGS, serviceEnv: ctx.serviceEnv ?? {}, notify: ours, pgbossResult: peer },
      };
    } finally {
      await receiver.close();
    }
  },
};
