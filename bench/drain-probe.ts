// The shape of a backlog drain over time (session 28, BENCHMARKS.md): one `notify start` drains
// N notifications queued before it started (cold), then N queued in one transaction (warm), as
// the end-to-end scenario's drains do. Every 200 ms it prints the receiver's requests, the
// attempts and sent notifications, the unpublished outbox rows (delivery requests, and the rest),
// and the CPU over the interval of the service's main thread, of all its threads and of the whole
// machine (`/proc`); after each drain, the CPU of each of the service's threads and of the
// database's PostgreSQL backends by application_name (the service's pool, its LISTEN connection;
// a backend that started during the drain counts whole, its start-up included, and one that ended
// during it is missed). What it answers:
// which stage a slow stretch of the drain waits on, and whether anything is idle meanwhile.
//   pnpm build && tsc -p bench/tsconfig.json && node bench/dist/drain-probe.js [N] [NAME=value ...]
// NAME=value pairs go into the service's environment (e.g. NOTIFY_RELAY_LINGER_MS=0). Needs
// PostgreSQL (DATABASE_URL) and Kafka (KAFKA_BROKERS, or the project's broker), as `pnpm bench`.
import { readFileSync, readdirSync } from 'node:fs';
import { statCpuMs } from './lib/cpu-meter.js';
import { envAssignments } from './lib/options.js';
import { prefillAtOnce, prefillNotifications } from './lib/load.js';
import { startReceiver } from './lib/receiver.js';
import { startNotifyService } from './lib/service.js';
import { benchPool } from './lib/pool.js';
import { createStack } from './lib/stack.js';
import { sleep } from './lib/stats.js';

const args = process.argv.slice(2);
const count = Number(args.find((a) => /^\d+$/.test(a)) ?? 10_000);
const env = envAssignments(args);

/** CPU ms of one thread of `pid` (NaN once it is gone). */
const threadCpuMs = (pid: number, tid: string): number => statCpuMs(`/proc/${pid}/task/${tid}/stat`) ?? Number.NaN;

/** CPU ms of every live thread of `pid`, by thread id (one that ended since the listing is left out). */
function perThread(pid: number): Map<string, number> {
  const ms = new Map<string, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const spent = threadCpuMs(pid, tid);
    if (!Number.isNaN(spent)) ms.set(tid, spent);
  }
  return ms;
}

/** Idle and total ticks of the machine (`/proc/stat`, first line). */
function machineTicks(): { idle: number; total: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  return { idle: f[3]! + f[4]!, total: f.reduce((a, b) => a + b, 0) };
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

// The probe's own connections, which backendCpu leaves out.
const PROBE_APP = 'notify-drain-probe';

/** CPU ms of every PostgreSQL backend connected to `database` but the probe's, by pid, with its application_name. */
async function backendCpu(admin: ReturnType<typeof benchPool>, database: string): Promise<Map<number, { app: string; ms: number }>> {
  const { rows } = await admin.query<{ pid: number; app: string }>(
    'SELECT pid, application_name AS app FROM pg_stat_activity WHERE datname = $1 AND application_name <> $2',
    [database, PROBE_APP],
  );
  const out = new Map<number, { app: string; ms: number }>();
  for (const { pid, app } of rows) {
    const ms = statCpuMs(`/proc/${pid}/stat`);
    if (ms !== undefined) out.set(pid, { app, ms });
  }
  return out;
}

const stack = await createStack(process.env, () => {});
const receiver = await startReceiver();
const db = await stack.freshDatabase('drain_probe');
const pool = benchPool(db.url, 2, PROBE_APP);
try {
  await prefillNotifications(db.url, count, receiver.url);
  receiver.reset();
  const service = await startNotifyService({
    name: 'drain-probe',
    databaseUrl: db.url,
    brokers: await stack.kafkaBrokers(),
    topicPrefix: stack.topicPrefix('drain-probe'),
    env,
  });
  const pid = service.child.pid;
  try {
    const watch = async (label: string, offset: number) => {
      const start = performance.now();
      let before = { main: threadCpuMs(pid, String(pid)), all: sum(perThread(pid)), machine: machineTicks(), at: start };
      const threadsBefore = perThread(pid);
      const backendsBefore = await backendCpu(pool, db.name);
      console.log(`== ${label}: ms since start, CPU over the interval (% of one core; machine: % of all), progress`);
      for (;;) {
        const { rows } = await pool.query<{ sent: number; attempts: number; requests: number; other: number }>(
          `SELECT (SELECT count(*) FROM notifications WHERE state = 'sent')::int - $1 AS sent,
                  (SELECT count(*) FROM attempts)::int - $1 AS attempts,
                  (SELECT count(*) FROM outbox WHERE topic = 'requests')::int AS requests,
                  (SELECT count(*) FROM outbox WHERE topic <> 'requests')::int AS other`,
          [offset],
        );
        const now = { main: threadCpuMs(pid, String(pid)), all: sum(perThread(pid)), machine: machineTicks(), at: performance.now() };
        const elapsedMs = now.at - before.at;
        const busy = 100 - ((now.machine.idle - before.machine.idle) / (now.machine.total - before.machine.total)) * 100;
        const x = rows[0]!;
        console.log(
          [
            Math.round(now.at - start),
            `main ${Math.round(((now.main - before.main) / elapsedMs) * 100)}%`,
            `threads ${Math.round(((now.all - before.all) / elapsedMs) * 100)}%`,
            `machine ${Math.round(busy)}%`,
            `received ${receiver.requests()}`,
            `attempts ${x.attempts}`,
            `sent ${x.sent}`,
            `unpublished requests ${x.requests}, other ${x.other}`,
          ].join('\t'),
        );
        before = now;
        if (x.sent >= count) break;
        if (now.at - start > 600_000) throw new Error(`the ${label} drain did not finish in 10 minutes: ${x.sent} of ${count} sent`);
        await sleep(200);
      }
      const after = perThread(pid);
      const spent = [...after].map(
        ([tid, t]) => [tid === String(pid) ? 'main' : `thread ${tid}`, Math.round(t - (threadsBefore.get(tid) ?? 0))] as const,
      );
      console.log(
        `${label} CPU by thread: ${spent
          .filter(([, ms]) => ms > 0)
          .map(([name, ms]) => `${name} ${ms} ms`)
          .join(', ')}`,
      );
      // PostgreSQL: each backend's CPU over the drain (one that started during it: all of it), by
      // application (the probe's own connections left out).
      const byApp = new Map<string, { ms: number; backends: number }>();
      for (const [bpid, b] of await backendCpu(pool, db.name)) {
        const e = byApp.get(b.app) ?? { ms: 0, backends: 0 };
        e.ms += b.ms - (backendsBefore.get(bpid)?.ms ?? 0);
        e.backends += 1;
        byApp.set(b.app, e);
      }
      console.log(
        `${label} PostgreSQL CPU by application: ${[...byApp]
          .map(([app, e]) => `${app || '(none)'} ${Math.round(e.ms)} ms (${e.backends} backends)`)
          .join(', ')}`,
      );
    };
    await watch('cold', 0);
    receiver.reset();
    await prefillAtOnce(db.url, count, receiver.url, count);
    await watch('warm', count);
  } finally {
    await service.child.stop();
  }
} finally {
  await pool.end();
  await receiver.close();
  await db.drop();
  await stack.cleanup();
}
