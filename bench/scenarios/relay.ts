import { readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Figure } from '../lib/report.js';
import { ROOT, startNode } from '../lib/process.js';
import type { Scenario } from './types.js';

/** What bench/relay.ts writes to bench/results/relay.json (the relay engineer's script; read, not rewritten). */
interface RelayScriptReport {
  readonly at: string;
  readonly rows: number;
  /** Messages each row publishes (absent before migration 0150: 1). */
  readonly messagesPerRow?: number;
  readonly rounds: number;
  readonly partitions: number;
  readonly producer: Record<string, unknown>;
  readonly summary: readonly { batchSize: number; relayRowsPerSec: number; rawRowsPerSec: number; ratio: number }[];
  readonly rounds_detail: readonly Record<string, number>[];
}

const SCRIPT_OUTPUT = path.join(ROOT, 'bench', 'results', 'relay.json');

/**
 * Runs the relay engineer's bench/relay.ts unchanged, in its own process: it pre-fills an outbox
 * of 100,000 rows, times one relay instance publishing them, and times raw kafkajs `sendBatch`
 * of the same messages with the same producer settings, alternating per round. This scenario
 * adds the child's peak RSS and turns its summary into figures.
 */
export const relayScenario: Scenario = {
  name: 'relay',
  description: 'outbox → Kafka rows/s by the relay vs raw kafkajs sendBatch of the same messages (bench/relay.ts)',
  needsKafka: true,
  async run(ctx) {
    const brokers = await ctx.stack.kafkaBrokers();
    const rows = ctx.quick ? 10_000 : 100_000;
    const rounds = ctx.quick ? 1 : 3;
    const startedAt = Date.now();
    // bench/relay.ts always writes bench/results/relay.json, the file this harness writes for a full
    // run; keep what was there so a quick run does not replace the full run's report.
    const previous = await readFile(SCRIPT_OUTPUT, 'utf8').catch(() => undefined);
    const child = startNode({
      name: 'relay-script',
      script: 'bench/relay.ts',
      args: ['--rows', String(rows), '--rounds', String(rounds), '--batch', '1000'],
      env: { DATABASE_URL: ctx.stack.serverUrl, KAFKA_BROKERS: brokers.join(',') },
      profileDir: ctx.cpuProfDir,
    });
    ctx.log(`relay: bench/relay.ts --rows ${rows} --rounds ${rounds} (log: ${path.relative(ROOT, child.logFile)})`);
    const { code } = await Promise.race([
      child.exited,
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error('bench/relay.ts did not finish within 10 minutes')), 10 * 60_000).unref(),
      ),
    ]);
    const peak = child.memory.peakBytes();
    if (code !== 0) throw new Error(`bench/relay.ts exited with code ${code}; see ${path.relative(ROOT, child.logFile)}`);
    if ((await stat(SCRIPT_OUTPUT)).mtimeMs < startedAt) throw new Error('bench/relay.ts did not write bench/results/relay.json');
    const report = JSON.parse(await readFile(SCRIPT_OUTPUT, 'utf8')) as RelayScriptReport;
    if (previous !== undefined) await writeFile(SCRIPT_OUTPUT, previous);
    else await rm(SCRIPT_OUTPUT, { force: true });
    const figures: Figure[] = report.summary.map((s) => ({
      id: `batch${s.batchSize}.rate`,
      // since migration 0150 a row is a request carrying its queued event: two messages
      label: `relay rows/s, ${report.rows.toLocaleString('en-US')} rows${report.messagesPerRow === 2 ? ' (request + queued event)' : ''}, batch ${s.batchSize}`,
      value: s.relayRowsPerSec,
      unit: '/s',
      baseline: { label: 'raw kafkajs sendBatch', value: s.rawRowsPerSec },
      // bench/relay.ts reports the median of per-round ratios (each round times both back to back).
      ratio: s.ratio,
      targets: [{ on: 'ratio', op: '>=', value: 0.8 }],
      ...(ctx.quick ? { note: `quick mode: ${rows} rows, 1 round` } : {}),
    }));
    return {
      figures,
      peakRss: { 'relay + raw producer process (bench/relay.ts)': peak },
      details: { script: 'bench/relay.ts', scriptReport: report },
    };
  },
};
