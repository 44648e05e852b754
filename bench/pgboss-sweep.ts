// `node bench/dist/pgboss-sweep.js [--quick]` (compiled by `pnpm bench`): the peer baseline's settings, chosen by measurement.
// Runs the end-to-end scenario's pg-boss half (backlog drain, then 1,000/s latency) for several
// worker settings and prints them, so the settings in PGBOSS_SETTINGS are the best of these on
// this machine rather than a handicap.
import { startReceiver } from './lib/receiver.js';
import { createStack } from './lib/stack.js';
import { e2eWorkload, runPgBoss } from './scenarios/end-to-end.js';

const SETTINGS = [
  { workers: 1, batchSize: 32, concurrencyPerWorker: 32, pollingIntervalSeconds: 0.5, poolSize: 10 },
  { workers: 4, batchSize: 100, concurrencyPerWorker: 8, pollingIntervalSeconds: 0.5, poolSize: 10 },
  { workers: 4, batchSize: 250, concurrencyPerWorker: 8, pollingIntervalSeconds: 0.5, poolSize: 10 },
  { workers: 8, batchSize: 250, concurrencyPerWorker: 4, pollingIntervalSeconds: 0.5, poolSize: 10 },
  { workers: 2, batchSize: 1000, concurrencyPerWorker: 16, pollingIntervalSeconds: 0.5, poolSize: 10 },
] as const;

const log = (line: string) => process.stderr.write(`[sweep] ${line}\n`);
const quick = process.argv.includes('--quick');
const stack = await createStack(process.env, log);
const receiver = await startReceiver();
const w = { ...e2eWorkload(quick), backlog: quick ? 3_000 : 10_000, latencyWindowMs: 5_000, rates: [1_000] };
try {
  for (const s of SETTINGS) {
    const r = await runPgBoss({ quick, stack, log }, receiver, w, s).catch((err: Error) => err);
    if (r instanceof Error) {
      process.stdout.write(
        `workers ${s.workers} × batch ${s.batchSize} × ${s.concurrencyPerWorker} concurrent: ${r.message.split('\n')[0]}\n`,
      );
      continue;
    }
    process.stdout.write(
      `workers ${s.workers} × batch ${s.batchSize} × ${s.concurrencyPerWorker} concurrent: drain ${Math.round(r.drainPerSec)}/s, p50 ${Math.round(r.latency[0]!.latencyMs.p50)} ms, p99 ${Math.round(r.latency[0]!.latencyMs.p99)} ms at ${Math.round(r.latency[0]!.offered.achievedRate)}/s, CPU ${r.cpu.totalMs.toFixed(3)} ms/job\n`,
    );
  }
} finally {
  await receiver.close();
  await stack.cleanup();
}
