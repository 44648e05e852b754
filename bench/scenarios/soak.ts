import { createEnqueuer, offerAtRate, warmUp, webhookIntent } from '../lib/load.js';
import type { MemoryReading } from '../lib/process.js';
import { startReceiver } from '../lib/receiver.js';
import type { Figure } from '../lib/report.js';
import { startNotifyService } from '../lib/service.js';
import { stageBreakdown } from '../lib/stages.js';
import { stageFigures } from './end-to-end.js';
import { latencySummary, median, waitUntil } from '../lib/stats.js';
import type { Scenario } from './types.js';
import { benchPool } from '../lib/pool.js';

/** RSS of the readings whose time falls in [fromMs, toMs). */
function rssIn(readings: readonly MemoryReading[], fromMs: number, toMs: number): number[] {
  return readings.filter((r) => r.atMs >= fromMs && r.atMs < toMs).map((r) => r.rssBytes);
}

/**
 * RSS of `notify start` under a steady load: single-row enqueues at a fixed rate for 5 minutes
 * (quick mode: 15 s, labelled), after a warm-up. RSS is a saw-tooth (V8 grows the heap, then
 * collects), so growth compares the floor, the lowest RSS, of the last 20 % of the run with the
 * floor of the 20 % after the first 20 % (JIT, pools and buffers filling): retained memory raises
 * the floor. The same comparison of medians is reported next to it.
 */
export const soakScenario: Scenario = {
  name: 'soak',
  description: 'RSS growth of notify start over 5 minutes at a steady 100/s (quick: 15 s)',
  needsKafka: true,
  async run(ctx) {
    // A rate the service sustains with headroom here (see retry-heavy): growth must come from the
    // process, not from a backlog building up in memory.
    const rate = 100;
    const durationMs = ctx.quick ? 15_000 : 300_000;
    const db = await ctx.stack.freshDatabase('soak');
    const receiver = await startReceiver();
    try {
      const service = await startNotifyService({
        name: 'soak-notify',
        databaseUrl: db.url,
        brokers: await ctx.stack.kafkaBrokers(),
        topicPrefix: ctx.stack.topicPrefix('soak'),
        env: { ...ctx.serviceEnv },
        cpuProfDir: ctx.cpuProfDir,
      });
      try {
        await warmUp(db.url, receiver.url, () => receiver.delivered(), { rate, durationMs: ctx.quick ? 3_000 : 10_000 });
        receiver.reset();
        const enqueuer = createEnqueuer(db.url, 8);
        await enqueuer.warm(webhookIntent(receiver.url, 0));
        const committed = new Map<string, number>();
        ctx.log(`soak: ${rate}/s for ${durationMs / 1000} s`);
        const startAt = service.child.memory.sample()?.atMs ?? 0;
        const offered = await offerAtRate({
          rate,
          durationMs,
          maxInFlight: 32,
          op: async (n) => {
            const { id, committedAt } = await enqueuer.enqueueOne(webhookIntent(receiver.url, n));
            committed.set(id, committedAt);
          },
        });
        const endAt = service.child.memory.sample()?.atMs ?? startAt + durationMs;
        await enqueuer.close();
        await waitUntil(() => [...committed.keys()].every((id) => receiver.firstDelivered.has(id)), {
          timeoutMs: 30_000,
          message: 'every soak notification',
        }).catch(() => {});
        const readings = service.child.memory.readings;
        const span = endAt - startAt;
        const earlyWindow = rssIn(readings, startAt + 0.2 * span, startAt + 0.4 * span);
        const lateWindow = rssIn(readings, startAt + 0.8 * span, endAt + 1);
        const early = Math.min(...earlyWindow);
        const late = Math.min(...lateWindow);
        const earlyMedian = median(earlyWindow);
        const lateMedian = median(lateWindow);
        const latencies: number[] = [];
        for (const [id, at] of committed) {
          const arrived = receiver.firstDelivered.get(id);
          if (arrived !== undefined) latencies.push(arrived - at);
        }
        const lat = latencySummary(latencies);
        const peak = await service.child.stop();
        const pool = benchPool(db.url, 1);
        const stages = await stageBreakdown(pool, receiver.firstDelivered, [...committed.keys()]).finally(() => pool.end());
        const label = ctx.quick ? `quick mode: ${durationMs / 1000} s soak, not 5 minutes` : undefined;
        const figures: Figure[] = [
          {
            id: 'rss.growth',
            label: `RSS floor growth over ${durationMs / 1000} s at ${rate}/s`,
            value: ((late - early) / early) * 100,
            unit: '%',
            targets: [{ on: 'value', op: '<=', value: 10 }],
            note: `floor ${Math.round(early / 2 ** 20)} MiB after warm-up → ${Math.round(late / 2 ** 20)} MiB at the end${label ? `; ${label}` : ''}`,
          },
          {
            id: 'rss.growth.median',
            label: `RSS median growth over ${durationMs / 1000} s at ${rate}/s`,
            value: ((lateMedian - earlyMedian) / earlyMedian) * 100,
            unit: '%',
            note: `median ${Math.round(earlyMedian / 2 ** 20)} MiB → ${Math.round(lateMedian / 2 ** 20)} MiB`,
          },
          {
            id: 'p99',
            label: `commit → delivery p99 at ${rate}/s (soak)`,
            value: lat.p99,
            unit: 'ms',
            note: `p50 ${Math.round(lat.p50)} ms, ${lat.count} of ${committed.size} delivered`,
          },
          ...stageFigures(stages, `at ${rate}/s`),
        ];
        return {
          figures,
          peakRss: { 'notify start (all roles)': peak },
          details: {
            rate,
            durationMs,
            offered,
            rssFloorEarlyBytes: early,
            rssFloorLateBytes: late,
            rssMedianEarlyBytes: earlyMedian,
            rssMedianLateBytes: lateMedian,
            latencyMs: lat,
            stages,
            rssTimeline: readings
              .filter((_, i) => i % 4 === 0)
              .map((r) => ({ atMs: Math.round(r.atMs), rssMiB: Math.round((r.rssBytes / 2 ** 20) * 10) / 10 })),
          },
        };
      } finally {
        await service.child.stop();
      }
    } finally {
      await receiver.close();
      await db.drop();
    }
  },
};
