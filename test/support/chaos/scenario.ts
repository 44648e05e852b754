import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { inject } from 'vitest';
import { fromKysely } from '@notify/outbox';
import { connectTestDatabase, createTestDatabase, type TestDatabase } from '../db.js';
import { waitFor } from '../wait.js';
import { type AuditReport, auditRun, waitForSettled } from './audit.js';
import { type ChaosReceiver, type ReceiverBehaviour, type ReceiverRequest, startChaosReceiver } from './receiver.js';
import { ChildSet, type NotifyChild, chaosEnv, retryOf, seededRandom, stackTopics, startEnqueueLoad } from './stack.js';
import { ensureTopics } from '@notify/cli';

/** One process of the stack under test: a name and the roles `notify start` runs in it. */
export interface StackProcess {
  readonly name: string;
  readonly roles: readonly ('api' | 'relay' | 'dispatcher')[];
  /** Runs in a CPU group of its own at this nice value (`ownCpuGroup` in stack.ts). */
  readonly cpuGroupNice?: number;
}

/** A fault scenario: N notifications through the real stack while `fault` does its worst, then the audit. */
export interface Scenario {
  /** The row name in the table. */
  readonly name: string;
  readonly notifications: number;
  /** The load enqueues over about this long, so faults land while notifications are in every stage. */
  readonly spreadMs: number;
  /** Distinct receiver paths, i.e. distinct message keys. Default 25. */
  readonly keys?: number;
  /** Environment overrides for every `notify start` (see `chaosEnv` for the defaults). */
  readonly env?: Readonly<Record<string, string>>;
  /** How the receiver answers; default 200 at once. */
  readonly behaviour?: (req: ReceiverRequest) => ReceiverBehaviour;
  /** Started before the load; the fault may kill, restart and add processes. */
  readonly processes: readonly StackProcess[];
  /**
   * A migrated, empty database to run on (e.g. on a private PostgreSQL server the fault stops);
   * default a fresh copy of the run's template on the shared server.
   */
  readonly databaseUrl?: string;
  /** Kafka to use; default the shared test broker. */
  readonly brokers?: readonly string[];
  /** Runs alongside the load; must leave a stack that can finish the work. */
  readonly fault?: (ctx: ScenarioContext) => Promise<void>;
  /** How long the run may take to settle after the load and the fault. Default 90 s. */
  readonly settleTimeoutMs?: number;
  /** Dead notifications the scenario allows (see `AuditParams.allowedDead`). */
  readonly allowedDead?: number;
  /** How often a progress line goes into the timeline. Default 5 s. */
  readonly sampleEveryMs?: number;
  readonly seed: number;
}

/** What a fault sees. */
export interface ScenarioContext {
  readonly env: Readonly<Record<string, string>>;
  readonly db: TestDatabase;
  readonly receiver: ChaosReceiver;
  readonly brokers: readonly string[];
  readonly prefix: string;
  /** Seeded: the same seed gives the same fault schedule. */
  readonly random: () => number;
  /** Notifications enqueued so far, and the target. */
  enqueued(): number;
  readonly total: number;
  /** How long the load takes to enqueue (the scenario's `spreadMs`). */
  readonly spreadMs: number;
  /** The running process of that name. */
  process(name: string): NotifyChild;
  /** Starts a (new or restarted) process. */
  start(proc: StackProcess): Promise<NotifyChild>;
  /** SIGTERMs the named process (a graceful stop) and waits for it to exit; returns its exit code. */
  stop(name: string): Promise<number | null>;
  /** SIGKILLs the named process and does not start it again. */
  kill(name: string): Promise<void>;
  /** SIGKILLs the named process, then starts it again with the same roles. Returns the new child. */
  killAndRestart(name: string, between?: () => Promise<void>): Promise<NotifyChild>;
  /** Waits for a condition (no bare sleeps), with a deadline. */
  until(condition: () => boolean | Promise<boolean>, message: string, timeoutMs?: number): Promise<void>;
  /** Records a fault in the timeline. */
  note(event: string): void;
  /** Adds notifications enqueued another way (e.g. through the API) to the ones the audit checks. */
  adopt(ids: readonly string[]): void;
}

/**
 * How often one dispatcher process joined its consumer groups (`notify_kafka_group_joins_total`
 * by lane, from its /metrics, scraped every few seconds and right before the harness stops or kills
 * it): 1 per lane at start, +1 per rebalance and per kafkajs consumer restart.
 */
interface GroupJoins {
  readonly name: string;
  readonly pid: number;
  readonly normal: number;
  readonly high: number;
}

/** The outcome of a scenario. */
export interface ScenarioResult {
  readonly report: AuditReport;
  /** What the fault did, with seconds since the start. */
  readonly timeline: readonly string[];
  /** Processes that exited without being told to (must be none: a crash is a finding). */
  readonly crashed: readonly string[];
  /** Everything every process wrote. */
  readonly logs: string;
  /** Kafka group joins of every dispatcher process of the run (see `GroupJoins`). */
  readonly groupJoins: readonly GroupJoins[];
  readonly seed: number;
}

/**
 * Runs one scenario on its own database and topic prefix: starts the receiver and the processes,
 * runs the load and the fault together, waits for the run to settle, audits, and stops
 * everything (also when something fails). The test asserts on the result.
 */
export async function runScenario(s: Scenario): Promise<ScenarioResult> {
  const brokers = s.brokers ?? inject('kafkaBrokers').split(',');
  const prefix = `${inject('runId')}.chaos.${randomBytes(3).toString('hex')}`;
  const t0 = Date.now();
  const timeline: string[] = [];
  const note = (event: string) => timeline.push(`${((Date.now() - t0) / 1000).toFixed(1)}s ${event}`);
  const random = seededRandom(s.seed);
  const children = new ChildSet();
  const running = new Map<string, { child: NotifyChild; proc: StackProcess }>();
  const intentional = new Set<NotifyChild>();
  const crashed: string[] = [];
  const restarts = new Map<string, number>();
  let closing = false;
  const db = s.databaseUrl ? connectTestDatabase(s.databaseUrl) : await createTestDatabase();
  const receiver = await startChaosReceiver(s.behaviour);
  const kafka = new Kafka({ clientId: 'chaos-admin', brokers: [...brokers], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const env = chaosEnv({ databaseUrl: db.url, brokers, prefix, extra: s.env });
  const retry = retryOf(env);
  const topics = stackTopics(env);

  const start = async (proc: StackProcess) => {
    const child = await children.start(
      proc.name,
      proc.roles,
      env,
      proc.cpuGroupNice !== undefined ? { cpuGroupNice: proc.cpuGroupNice } : {},
    );
    running.set(proc.name, { child, proc });
    child.child.on('close', (code, signal) => {
      if (!intentional.has(child)) {
        const tail = child
          .output()
          .trimEnd()
          .split('\n')
          .slice(-40)
          .map((l) => `      | ${l.slice(0, 400)}`)
          .join('\n');
        crashed.push(`${proc.name} (pid ${child.pid}) exited by itself: code ${code}, signal ${signal}; its last lines:\n${tail}`);
        // Like any process supervisor would: start it again (a few times at most), so the audit
        // still tells whether a crash lost anything. The crash itself fails the test regardless.
        if (!closing && (restarts.get(proc.name) ?? 0) < 5) {
          restarts.set(proc.name, (restarts.get(proc.name) ?? 0) + 1);
          note(`${proc.name} (pid ${child.pid}) CRASHED with code ${code}; the supervisor restarts it`);
          running.delete(proc.name);
          start(proc).catch((err: unknown) => note(`restart of ${proc.name} failed: ${(err as Error).message.split('\n')[0]}`));
        }
      }
    });
    note(`started ${proc.name} (pid ${child.pid})${child.cpuGroup ? `, ${child.cpuGroup}` : ''}`);
    return child;
  };
  const joins = new Map<number, GroupJoins>();
  const scrapeJoins = async (child: NotifyChild) => {
    try {
      const res = await fetch(`${child.adminUrl}/metrics`, { signal: AbortSignal.timeout(3_000) });
      const text = await res.text();
      const of = (lane: string) =>
        Number(new RegExp(`^notify_kafka_group_joins_total\\{lane="${lane}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      joins.set(child.pid, { name: child.name, pid: child.pid, normal: of('normal'), high: of('high') });
    } catch {
      // gone or busy: the last scrape stands
    }
  };
  const isDispatcher = (child: NotifyChild) => [...running.values()].some((r) => r.child === child && r.proc.roles.includes('dispatcher'));
  const scrapeDispatchers = () =>
    Promise.all([...running.values()].filter((r) => r.proc.roles.includes('dispatcher')).map((r) => scrapeJoins(r.child)));
  const processOf = (name: string) => {
    const r = running.get(name);
    if (!r) throw new Error(`no process ${name}`);
    return r.child;
  };

  const adopted: string[] = [];
  let settledOk: boolean;
  try {
    await admin.connect();
    await ensureTopics(admin, topics, Number(env.NOTIFY_TOPIC_PARTITIONS));
    await Promise.all(s.processes.map(start));

    const keys = s.keys ?? 25;
    const load = startEnqueueLoad({
      db: db.db,
      count: s.notifications,
      spreadMs: s.spreadMs,
      tenant: 'chaos',
      urlFor: (i) => `${receiver.url}/hooks/${i % keys}`,
      retry,
    });
    const ctx: ScenarioContext = {
      env,
      db,
      receiver,
      brokers,
      prefix,
      random,
      total: s.notifications,
      spreadMs: s.spreadMs,
      enqueued: () => load.ids.length,
      process: processOf,
      start,
      async stop(name) {
        const child = processOf(name);
        if (isDispatcher(child)) await scrapeJoins(child);
        intentional.add(child);
        note(`SIGTERM ${name} (pid ${child.pid})`);
        const code = await child.stop();
        running.delete(name);
        note(`${name} exited with ${code}`);
        return code;
      },
      async kill(name) {
        const child = processOf(name);
        if (isDispatcher(child)) await scrapeJoins(child);
        intentional.add(child);
        await child.kill();
        note(`SIGKILL ${name} (pid ${child.pid}), not restarted`);
        running.delete(name);
      },
      async killAndRestart(name, between) {
        const { child, proc } =
          running.get(name) ??
          (() => {
            throw new Error(`no process ${name}`);
          })();
        if (proc.roles.includes('dispatcher')) await scrapeJoins(child);
        intentional.add(child);
        await child.kill();
        note(`SIGKILL ${name} (pid ${child.pid})`);
        running.delete(name);
        if (between) await between();
        return start(proc);
      },
      async until(condition, message, timeoutMs = 60_000) {
        await waitFor(condition, { timeoutMs, intervalMs: 20, message });
      },
      note,
      adopt: (ids) => void adopted.push(...ids),
    };
    // A progress line every few seconds, so the timeline shows which stage lags after a fault.
    const sampler = setInterval(() => {
      void scrapeDispatchers();
      db.pool
        .query<{ unpublished: number; queued: number }>(
          `SELECT (SELECT count(*)::int FROM outbox WHERE published_at IS NULL) AS unpublished,
                  (SELECT count(*)::int FROM notifications WHERE state = 'queued') AS queued`,
        )
        .then(({ rows }) =>
          note(
            `  progress: ${load.ids.length} enqueued, ${rows[0]!.unpublished} outbox rows unpublished, ${rows[0]!.queued} queued, ${receiver.acceptedIds.size} received`,
          ),
        )
        .catch(() => {});
    }, s.sampleEveryMs ?? 5_000);
    try {
      await Promise.all([load.done, s.fault?.(ctx)]);
      note(`load done: ${load.ids.length} enqueued`);
      settledOk = await waitForSettled(fromKysely(db.db), {
        timeoutMs: s.settleTimeoutMs ?? 90_000,
        extra: async () => {
          const { rows } = await db.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM notifications WHERE state = 'queued'");
          return rows[0]!.n === 0;
        },
      });
    } finally {
      clearInterval(sampler);
    }
    note(settledOk ? 'settled' : 'did NOT settle before the deadline');
    await scrapeDispatchers();
    const groupJoins = [...joins.values()];
    const rejoins = groupJoins.reduce((n, j) => n + Math.max(0, j.normal - 1), 0);
    note(
      `kafka group joins per dispatcher process (normal/high lane): ${groupJoins.map((j) => `${j.name} ${j.normal}/${j.high}`).join(', ')}; ${rejoins} rejoins beyond the first`,
    );
    const peakRssMb = Math.max(0, ...[...running.values()].map(({ child }) => peakRssMbOf(child.pid)));
    const audited = await auditRun({
      scenario: s.name,
      db: fromKysely(db.db),
      ids: [...load.ids, ...adopted],
      deliveries: receiver.deliveries,
      retry,
      allowedDead: s.allowedDead ?? 0,
    });
    const report = { ...audited, row: { ...audited.row, peakRssMb, rejoins } };
    if (receiver.anonymous > 0)
      (report.problems as string[]).push(`${receiver.anonymous} requests reached the receiver without a webhook-id`);
    return { report, timeline, crashed: [...crashed], logs: children.logs(), groupJoins, seed: s.seed };
  } catch (error) {
    // A scenario that throws (a deadline passed) returns no result, so its timeline and the stack's
    // output would be lost with it: kept in .cache/chaos/<scenario>.failed.log to explain the stall.
    const file = writeChaosLog(s.name, `${timeline.join('\n')}\n\n${children.logs()}`, '.failed');
    console.info(`[chaos] ${s.name} failed; its timeline and the stack's output: ${file}`);
    throw error;
  } finally {
    closing = true;
    for (const { child } of running.values()) intentional.add(child);
    await children.stopAll().catch(() => {});
    await children.killAll();
    await receiver.close();
    await admin.deleteTopics({ topics }).catch(() => {});
    await admin.disconnect().catch(() => {});
    await db.close();
  }
}

/** Writes a scenario's log to `.cache/chaos/<name, non-alphanumerics as '-'><suffix>.log`; returns the path. */
export function writeChaosLog(name: string, text: string, suffix = ''): string {
  const file = path.resolve('.cache', 'chaos', `${name.replace(/[^a-z0-9]+/gi, '-')}${suffix}.log`);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** The kernel's peak resident set size (VmHWM) of a live process, in MiB; 0 when it is gone. */
export function peakRssMbOf(pid: number): number {
  try {
    const kb = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb ? Math.round(Number(kb) / 1024) : 0;
  } catch {
    return 0;
  }
}

/** `count` distinct seeded fractions in (lo, hi), ascending: when (in load progress) to strike. */
export function strikePoints(random: () => number, count: number, lo = 0.1, hi = 0.9): number[] {
  return Array.from({ length: count }, () => lo + random() * (hi - lo)).sort((a, b) => a - b);
}
