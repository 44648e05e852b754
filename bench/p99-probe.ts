// p99 commit → delivery at one offered rate, service settings side by side (session 28,
// BENCHMARKS.md): more windows of one rate than `pnpm bench end-to-end` gives, for a setting whose
// effect is small against the spread of one window. Each pair runs every setting once, in
// alternating order; each run gets a fresh database and `notify start`, a 3-s warm-up window,
// then one measured window from bench/workers/latency-load.ts (the end-to-end scenario's load:
// its own process, 32 connections, `BEGIN; enqueue(); COMMIT`).
//   pnpm build && tsc -p bench/tsconfig.json && node bench/dist/p99-probe.js \
//     [--rate 500] [--window-ms 10000] [--pairs 4] [--lead-in MS] [--lead-out MS] [--profile DIR] SETTING SETTING ...
// --lead-in / --lead-out: the steady load around the measured span (default: the end-to-end scenario's).
// A SETTING is `default` or comma-separated NAME=value pairs for the service's environment, e.g.
// `default NOTIFY_RELAY_ORDER_WAIT_MS=0`. `--profile DIR` runs each service with `--cpu-prof`.
// Each window also prints the p99 of each 10-s slice of it (a service started for the run is
// slower in its first seconds) and the CPU per delivered notification of the service process and
// of the database's PostgreSQL backends alive at the window's end: the service's (a connection it
// closed during the window is missed); the load generator's have usually ended by then (one still
// closing would count whole).
import { cpuPerUnit, cpuSnapshot } from './lib/cpu-meter.js';
import { optionTaker } from './lib/options.js';
import { benchPool } from './lib/pool.js';
import { startReceiver } from './lib/receiver.js';
import { startNotifyService } from './lib/service.js';
import { createStack } from './lib/stack.js';
import { median } from './lib/stats.js';
import { loadWindow } from './scenarios/end-to-end.js';

const args = process.argv.slice(2);
const option = optionTaker(args);
const rate = Number(option('--rate', '500'));
const windowMs = Number(option('--window-ms', '10000'));
const pairs = Number(option('--pairs', '4'));
const profileDir = option('--profile', '');
const leadIn = option('--lead-in', '');
const leadOut = option('--lead-out', '');
const leads = { ...(leadIn ? { leadInMs: Number(leadIn) } : {}), ...(leadOut ? { leadOutMs: Number(leadOut) } : {}) };
const settings = (args.length > 0 ? args : ['default']).map((s) => ({
  name: s,
  env: s === 'default' ? {} : Object.fromEntries(s.split(',').map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)])),
}));

const stack = await createStack(process.env, () => {});
const receiver = await startReceiver();
const brokers = await stack.kafkaBrokers();

/** One window at `rate` for `ms`: commit → first arrival of each notification (undelivered ones count with the time waited). */
async function window(url: string, ms: number) {
  receiver.reset();
  const { output, result } = await loadWindow('p99-probe-load', receiver, { system: 'notify', url, rate, durationMs: ms, ...leads });
  // delivered: the CPU snapshots span the lead-in and lead-out too.
  return {
    latency: result.latencyMs,
    offered: output.offered,
    delivered: result.delivered,
    sliceP99Ms: result.sliceP99Ms,
  };
}

const p99s = new Map<string, number[]>(settings.map((s) => [s.name, []]));
let runs = 0; // each run its own topics: nothing of an earlier run is left for the next service to read
try {
  for (let pair = 0; pair < pairs; pair++) {
    for (const setting of pair % 2 === 0 ? settings : [...settings].reverse()) {
      const db = await stack.freshDatabase('p99_probe');
      const service = await startNotifyService({
        name: `p99-probe-${pair}`,
        databaseUrl: db.url,
        brokers,
        topicPrefix: stack.topicPrefix(`p99-probe-${runs++}`),
        env: setting.env,
        cpuProfDir: profileDir || undefined,
      });
      const admin = benchPool(db.url, 1);
      try {
        await window(db.url, 3_000);
        const parts = { service: service.child.process.pid!, database: db.name, admin };
        const before = await cpuSnapshot(parts);
        const { latency, offered, delivered, sliceP99Ms } = await window(db.url, windowMs);
        const cpu = cpuPerUnit(before, await cpuSnapshot(parts), delivered, 1);
        p99s.get(setting.name)!.push(latency.p99);
        console.log(
          `${new Date().toISOString().slice(11, 19)} ${setting.name}: p50 ${latency.p50.toFixed(0)} ms, p99 ${latency.p99.toFixed(0)} ms, ` +
            `${latency.count} notifications, offered ${offered.achievedRate.toFixed(0)}/s; ` +
            `p99 of each 10-s slice ${sliceP99Ms.map(Math.round).join(', ')} ms; ` +
            `CPU per notification: service ${cpu.serviceMs.toFixed(3)} ms, PostgreSQL ${cpu.postgresMs.toFixed(3)} ms`,
        );
      } finally {
        await admin.end();
        await service.child.stop();
        await db.drop();
      }
    }
  }
  for (const [name, values] of p99s)
    console.log(`${name}: p99 ${values.map((v) => v.toFixed(0)).join(', ')} ms; median ${median(values).toFixed(0)} ms`);
} finally {
  await receiver.close();
  await stack.cleanup();
}
