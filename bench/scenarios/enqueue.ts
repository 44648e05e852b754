import type { Figure } from '../lib/report.js';
import { median, pairedRatio } from '../lib/stats.js';
import { runWorker } from '../lib/worker.js';
import { ENQUEUE_VARIANTS, type EnqueueLoadInput, type EnqueueLoadOutput, type EnqueueVariant } from '../workers/enqueue-load.js';
import type { Scenario } from './types.js';

/**
 * enqueue(): single-row business transactions (BEGIN; enqueue; COMMIT) on a raw pg client, at 4
 * and 16 concurrent clients, against a plain single-row INSERT + COMMIT into a comparable table
 * with the same transaction shape, the same pool and the same database. Rounds alternate; each
 * rate is the median round and each ratio the median of per-round ratios. The load runs in a child process whose peak RSS is reported.
 * Full mode adds diagnostic variants (notify_enqueue_item called directly, as other languages and
 * enqueue() off its plain path do; the statement unprepared; the NOTIFY trigger off; an intent
 * with data) that show what the gap is made of; they carry no target. Compare the diagnostics
 * with each other, not with the headline ratio: a variant's place in the round moves its rate by
 * up to ~10 % at 16 clients (the same enqueue() read 0.65× in the noTrigger slot and 0.59× in the
 * headline's, BENCHMARKS.md session 44). The headline pair runs side by side in both orders.
 */
export const enqueueScenario: Scenario = {
  name: 'enqueue',
  description: 'enqueue() in single-row transactions vs a plain INSERT + COMMIT loop (4 and 16 clients)',
  needsKafka: false,
  async run(ctx) {
    const db = await ctx.stack.freshDatabase('enqueue');
    try {
      const variants: EnqueueVariant[] = ctx.quick
        ? ['plain', 'enqueue']
        : ['plain', 'enqueue', 'kysely', 'sqlFunction', 'unprepared', 'noTrigger', 'data'];
      const input: EnqueueLoadInput = {
        url: db.url,
        concurrencies: [4, 16],
        variants,
        rounds: ctx.quick ? 2 : 3,
        roundMs: ctx.quick ? 700 : 3_000,
        warmupMs: ctx.quick ? 200 : 1_000,
      };
      ctx.log(`enqueue: ${input.rounds} rounds × ${input.roundMs} ms per variant (${variants.join(', ')}) and concurrency`);
      const { output, peakRssBytes } = await runWorker<EnqueueLoadInput, EnqueueLoadOutput>(
        'enqueue-load',
        'bench/workers/enqueue-load.ts',
        input,
        {
          timeoutMs: 10 * 60_000,
          profileDir: ctx.cpuProfDir,
        },
      );
      const figures: Figure[] = [];
      for (const [c, r] of Object.entries(output)) {
        const plain = r.plain!;
        const base = { label: 'plain INSERT', value: median(plain.rates) };
        const rate = (v: EnqueueVariant) => median(r[v]!.rates);
        figures.push({
          id: `c${c}.enqueue`,
          label: `enqueue() tx/s, ${c} clients`,
          value: rate('enqueue'),
          unit: '/s',
          baseline: base,
          ratio: pairedRatio(r.enqueue!.rates, plain.rates),
          targets: [{ on: 'ratio', op: '>=', value: 0.6 }],
        });
        const paired = (v: EnqueueVariant) => pairedRatio(r[v]!.rates, plain.rates);
        if (r.kysely) {
          figures.push({
            id: `c${c}.kysely`,
            label: `${ENQUEUE_VARIANTS.kysely} tx/s, ${c} clients`,
            value: rate('kysely'),
            unit: '/s',
            baseline: base,
            ratio: paired('kysely'),
          });
        }
        for (const v of ['sqlFunction', 'unprepared', 'noTrigger', 'data'] as const) {
          if (r[v]) {
            figures.push({
              id: `c${c}.${v}`,
              label: `diag: ${ENQUEUE_VARIANTS[v]} tx/s, ${c} clients`,
              value: rate(v),
              unit: '/s',
              baseline: base,
              ratio: paired(v),
            });
          }
        }
        figures.push({
          id: `c${c}.p99`,
          label: `enqueue() tx p99, ${c} clients`,
          value: r.enqueue!.latencyMs.p99,
          unit: 'ms',
          baseline: { label: 'plain INSERT', value: plain.latencyMs.p99 },
        });
        figures.push({
          id: `c${c}.serverCpu`,
          label: `PostgreSQL backend CPU per enqueue() tx, ${c} clients`,
          value: r.enqueue!.serverCpuUsPerTx,
          unit: 'µs',
          baseline: { label: 'plain INSERT', value: plain.serverCpuUsPerTx },
        });
        figures.push({
          id: `c${c}.clientCpu`,
          label: `client process CPU per enqueue() tx, ${c} clients`,
          value: r.enqueue!.clientCpuUsPerTx,
          unit: 'µs',
          baseline: { label: 'plain INSERT', value: plain.clientCpuUsPerTx },
        });
      }
      return { figures, peakRss: { 'enqueue load process': peakRssBytes }, details: { input, results: output } };
    } finally {
      await db.drop();
    }
  },
};
