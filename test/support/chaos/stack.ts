import { type ChildProcess, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import { type Database } from '@notify/migrations';
import { type RetryConfig } from '@notify/dispatcher';
import { enqueue } from '@notify/outbox';
import { topicName } from '@notify/contract';
import { loadConfig } from '@notify/cli';
import { dispatcherTopicSuffixes } from '@notify/dispatcher';
import { waitFor } from '../wait.js';
import { adminUrlOf } from '../notify-process.js';

/** The repository root: children run `notify` from there, like `pnpm notify`. */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The compiled command, as users run it (the integration project's global setup builds it). */
const BIN = 'packages/cli/dist/bin/notify.js';

/**
 * The environment of a chaos stack: fast retries with no jitter (so the audit can rebuild every
 * due time), a short send timeout, local receivers allowed. Extra variables override these.
 */
export function chaosEnv(base: {
  readonly databaseUrl: string;
  readonly brokers: readonly string[];
  readonly prefix: string;
  readonly extra?: Readonly<Record<string, string>>;
}): Record<string, string> {
  return {
    DATABASE_URL: base.databaseUrl,
    KAFKA_BROKERS: base.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: base.prefix,
    NOTIFY_TOPIC_PARTITIONS: '3',
    PORT: '0',
    NOTIFY_ADMIN_PORT: '0',
    LOG_LEVEL: 'warn',
    NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
    NOTIFY_MAX_ATTEMPTS: '12',
    NOTIFY_BASE_DELAY_MS: '200',
    NOTIFY_MAX_DELAY_MS: '2000',
    NOTIFY_JITTER: '0',
    NOTIFY_SEND_TIMEOUT_MS: '1000',
    NOTIFY_RELAY_POLL_MS: '200',
    NOTIFY_REPAIR_AFTER_MS: '5000',
    NOTIFY_SHUTDOWN_TIMEOUT_MS: '5000',
    ...serviceEnvFromChaosEnv(process.env.CHAOS_SERVICE_ENV),
    ...base.extra,
  };
}

/**
 * CHAOS_SERVICE_ENV="NAME=value,NAME=value": service settings every scenario's processes get on top
 * of the defaults above, to measure a setting's effect with the same scenarios (for example
 * CHAOS_SERVICE_ENV=NOTIFY_KAFKA_SESSION_TIMEOUT_MS=30000 for the churn figures in RELIABILITY.md).
 */
function serviceEnvFromChaosEnv(spec: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (spec ?? '').split(',')) {
    if (!part.trim()) continue;
    const m = /^\s*(NOTIFY_[A-Z0-9_]+)=(.*)$/.exec(part);
    if (!m) throw new Error(`CHAOS_SERVICE_ENV: expected NOTIFY_NAME=value, got "${part}"`);
    out[m[1]!] = m[2]!.trim();
  }
  return out;
}

/** The retry policy a chaos environment configures (what the audit needs to rebuild due times). */
export function retryOf(env: Readonly<Record<string, string>>): RetryConfig {
  return loadConfig(env).retry;
}

/** Every topic `notify start` would create for this environment, as full names. */
export function stackTopics(env: Readonly<Record<string, string>>): string[] {
  const config = loadConfig(env);
  return dispatcherTopicSuffixes(config.retry).map((s) => topicName(config.topicPrefix, s));
}

/** A `notify start` child process. */
export interface NotifyChild {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  /** Its API URL with the api role, else its admin URL, from its "listening on" line. */
  readonly url: string;
  /** Its admin port (/healthz, /readyz, /metrics). */
  readonly adminUrl: string;
  /** Set when it was asked to run in a CPU group of its own (`cpuGroupNice`): what it got. */
  readonly cpuGroup?: string;
  /** Everything it wrote so far, stdout and stderr interleaved. */
  output(): string;
  /** True once it exited. */
  readonly exited: boolean;
  /** SIGKILL: no shutdown code runs. Resolves when it is gone. */
  kill(): Promise<void>;
  /** SIGTERM (SIGKILL after `timeoutMs`); resolves with the exit code (null when killed by a signal). */
  stop(timeoutMs?: number): Promise<number | null>;
}

/**
 * Gives the process `pid` (which must lead its own session: spawned `detached`) a CPU share of its
 * own, as a cgroup's `cpu.weight` or systemd's `CPUWeight=` would in a deployment. Linux's
 * scheduler shares the CPU between sessions (autogroups, `/proc/sys/kernel/sched_autogroup_enabled`)
 * before it shares a session's share between its processes, so a plain nice value only counts
 * against the processes of the same session; the autogroup's nice counts against every other
 * session on the machine (the test suite running beside the chaos run, other engineers' work).
 * Throws with the reason when the kernel refuses (no autogroups, or not allowed to lower nice).
 */
export function ownCpuGroup(pid: number, nice: number): void {
  writeFileSync(`/proc/${pid}/autogroup`, String(nice));
}

/**
 * Starts `notify start --roles <roles>` as a child (the compiled command, as `pnpm notify` runs it)
 * and waits for its "listening on" line. The child sees only PATH, HOME and `env`. A dispatcher
 * prints it after its first consumer group join, which waits for the other members to rejoin: at
 * load average ~25 on the 2-core machine a third dispatcher took over 60 s, hence 120 s.
 */
async function startNotifyChild(
  name: string,
  roles: readonly string[],
  env: Readonly<Record<string, string>>,
  {
    timeoutMs = 120_000,
    onSpawn,
    cpuGroupNice,
  }: { readonly timeoutMs?: number; readonly onSpawn?: (child: ChildProcess) => void; readonly cpuGroupNice?: number } = {},
): Promise<NotifyChild> {
  const child = spawn(process.execPath, [BIN, 'start', '--roles', roles.join(',')], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own session, so its own scheduling group (below).
    detached: cpuGroupNice !== undefined,
  });
  onSpawn?.(child);
  let cpuGroup: string | undefined;
  if (cpuGroupNice !== undefined && child.pid !== undefined) {
    try {
      ownCpuGroup(child.pid, cpuGroupNice);
      cpuGroup = `its own CPU group at nice ${cpuGroupNice}`;
    } catch (err) {
      cpuGroup = `no CPU group of its own (${(err as Error).message})`;
    }
  }
  let out = '';
  let exitCode: number | null | undefined;
  child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve((exitCode = code))));
  let url: string;
  try {
    url = await waitFor(
      () => {
        if (exitCode !== undefined) throw new Error(`exited with ${exitCode}`);
        return /listening on (http:\/\/\S+)/.exec(out)?.[1];
      },
      { timeoutMs, intervalMs: 50, message: `notify start --roles ${roles.join(',')} (${name}) to listen` },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- output of ${name}\n${out.slice(-4000)}`, { cause: err });
  }
  const adminUrl = adminUrlOf(out);
  return {
    name,
    adminUrl,
    child,
    pid: child.pid!,
    url,
    ...(cpuGroup !== undefined ? { cpuGroup } : {}),
    output: () => out,
    get exited() {
      return exitCode !== undefined;
    },
    async kill() {
      if (exitCode !== undefined) return;
      child.kill('SIGKILL');
      await closed;
    },
    async stop(stopTimeoutMs = 20_000) {
      if (exitCode !== undefined) return exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      const code = await closed;
      clearTimeout(timer);
      return code;
    },
  };
}

/** The children of one scenario, so a failing test still leaves no process behind. */
export class ChildSet {
  readonly #children = new Set<NotifyChild>();
  /** Every process spawned and not yet exited, also those still starting. */
  readonly #spawned = new Set<ChildProcess>();
  /** Everything every child (also the killed ones) wrote, for log checks. */
  #logs: string[] = [];

  /** Starts a child and keeps track of it. `cpuGroupNice`: see `ownCpuGroup`. */
  async start(
    name: string,
    roles: readonly string[],
    env: Readonly<Record<string, string>>,
    { cpuGroupNice }: { readonly cpuGroupNice?: number } = {},
  ): Promise<NotifyChild> {
    const c = await startNotifyChild(name, roles, env, {
      ...(cpuGroupNice !== undefined ? { cpuGroupNice } : {}),
      onSpawn: (p) => {
        this.#spawned.add(p);
        p.on('close', () => this.#spawned.delete(p));
      },
    });
    this.#children.add(c);
    c.child.on('close', () => {
      this.#logs.push(c.output());
      this.#children.delete(c);
    });
    return c;
  }

  /** The output of every child so far (running ones included). */
  logs(): string {
    return [...this.#logs, ...[...this.#children].map((c) => c.output())].join('\n');
  }

  /** SIGKILLs whatever still runs, including processes still starting. */
  async killAll(): Promise<void> {
    await Promise.all([...this.#children].map((c) => c.kill()));
    for (const p of this.#spawned) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }

  /** SIGTERMs whatever still runs; returns the exit codes by name. */
  async stopAll(): Promise<Record<string, number | null>> {
    const codes: Record<string, number | null> = {};
    await Promise.all([...this.#children].map(async (c) => (codes[c.name] = await c.stop())));
    return codes;
  }
}

/** A tiny seeded PRNG (mulberry32): the same seed gives the same fault schedule. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of this run: CHAOS_SEED when set (to replay a failure), else random; always printed by the caller. */
export function chaosSeed(): number {
  const fromEnv = process.env.CHAOS_SEED;
  return fromEnv ? Number(fromEnv) >>> 0 : Math.floor(Math.random() * 2 ** 32);
}

/** A producer of notifications that runs while faults happen: a domain service enqueueing in its own transactions. */
export interface EnqueueLoad {
  /** Ids enqueued so far (every committed one). */
  readonly ids: readonly string[];
  /** Resolves when all `count` are enqueued; rejects on the first enqueue error. */
  readonly done: Promise<void>;
}

/**
 * Enqueues `count` webhook notifications over about `spreadMs`, in small transactions, to
 * `urlFor(i)` (spread the index over a few paths to get several message keys). Enqueue retries
 * an attempt whose connection was cut (the pg_terminate_backend scenario): a domain service
 * would, and a notification that was never committed is not one the scenario counts.
 */
export function startEnqueueLoad(params: {
  readonly db: Kysely<Database>;
  readonly count: number;
  readonly spreadMs: number;
  readonly tenant: string;
  readonly urlFor: (i: number) => string;
  readonly retry: RetryConfig;
  readonly batch?: number;
}): EnqueueLoad {
  const ids: string[] = [];
  const batch = params.batch ?? 10;
  const batches = Math.ceil(params.count / batch);
  const gapMs = params.spreadMs / Math.max(1, batches);
  const done = (async () => {
    const t0 = Date.now();
    for (let b = 0; b < batches; b++) {
      const wait = t0 + b * gapMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const from = b * batch;
      const to = Math.min(params.count, from + batch);
      for (let attempt = 1, firstFailure = 0; ; attempt++) {
        try {
          const created = await params.db.transaction().execute(async (trx) => {
            const out: string[] = [];
            for (let i = from; i < to; i++) {
              const { notification } = await enqueue(
                trx,
                { tenant_id: params.tenant, channel: 'webhook', to: params.urlFor(i), body: `chaos ${i}`, idempotency_key: `load-${i}` },
                { maxAttempts: params.retry.maxAttempts, defaultTtlMs: params.retry.defaultTtlMs },
              );
              out.push(notification.id);
            }
            return out;
          });
          ids.push(...created);
          break;
        } catch (err) {
          // A cut connection or a server that is down: the transaction rolled back, or committed
          // before the cut. The idempotency keys make the retry return the committed rows instead
          // of new ones. A domain service keeps trying for a while (a PostgreSQL restart takes 20 s).
          firstFailure ||= Date.now();
          if (Date.now() - firstFailure > 90_000) throw err;
          await new Promise((r) => setTimeout(r, Math.min(1_000, 100 * attempt)));
        }
      }
    }
  })();
  done.catch(() => {});
  return { ids, done };
}

/** Runs a short `notify <args>` command (migrate, api-keys …) to completion. */
export function runNotifyCommand(
  args: readonly string[],
  env: Readonly<Record<string, string>>,
  timeoutMs = 30_000,
): Promise<{ readonly code: number | null; readonly stdout: string; readonly stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`notify ${args.join(' ')} did not finish within ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
