import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './root.js';

export { ROOT };

/** Where child processes' stdout/stderr go (one file per child), so a failed run can be read afterwards. */
const LOG_DIR = path.join(ROOT, 'bench', 'results', 'logs');

/** One reading of /proc/<pid>/status. */
export interface MemoryReading {
  /** Milliseconds since the sampler started. */
  readonly atMs: number;
  readonly rssBytes: number;
  /** Peak RSS so far (VmHWM). */
  readonly hwmBytes: number;
}

/** Reads VmRSS and VmHWM of a live process; undefined once it has exited. */
function readMemory(pid: number): { rssBytes: number; hwmBytes: number } | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return undefined;
  }
  const kb = (field: string) => {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) * 1024 : 0;
  };
  return { rssBytes: kb('VmRSS'), hwmBytes: kb('VmHWM') };
}

/** Samples a process's memory every `intervalMs`; `peakBytes` is the highest VmHWM seen (VmHWM only grows). */
interface MemorySampler {
  readonly readings: readonly MemoryReading[];
  peakBytes(): number;
  /** Takes one reading now (call it just before stopping the process: VmHWM then covers the whole run). */
  sample(): MemoryReading | undefined;
  stop(): void;
}

/** Starts sampling `pid`. */
function sampleMemory(pid: number, intervalMs = 250): MemorySampler {
  const started = performance.now();
  const readings: MemoryReading[] = [];
  let peak = 0;
  const sample = (): MemoryReading | undefined => {
    const m = readMemory(pid);
    if (!m) return undefined;
    const r = { atMs: performance.now() - started, ...m };
    readings.push(r);
    peak = Math.max(peak, m.hwmBytes, m.rssBytes);
    return r;
  };
  sample();
  const timer = setInterval(sample, intervalMs);
  timer.unref();
  return {
    readings,
    peakBytes: () => peak,
    sample,
    stop: () => clearInterval(timer),
  };
}

/** Options of `startNode`. */
export interface StartNodeOptions {
  /** A name for logs: bench/results/logs/<name>.log. */
  readonly name: string;
  /**
   * A file relative to the repository root: a harness source `bench/<file>.ts` runs as its compiled
   * `bench/dist/<file>.js`; a .js file runs as it is.
   */
  readonly script: string;
  readonly args?: readonly string[];
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Extra node flags, e.g. `--cpu-prof`. */
  readonly nodeFlags?: readonly string[];
  /** Open an IPC channel (the child can `process.send`). */
  readonly ipc?: boolean;
  /**
   * Profile the child with `--cpu-prof` into `<profileDir>/<name>/` (emptied first). Node writes
   * one file per thread (workers too), so the main thread's file is the
   * one named `CPU.<date>.<time>.<pid>.0.<seq>.cpuprofile` (see `mainThreadProfiles`).
   */
  readonly profileDir?: string | undefined;
}

/** `bench/<file>.ts` → `bench/dist/<file>.js` (what `pnpm bench` compiled); anything else unchanged. */
function compiledScript(script: string): string {
  const m = /^bench\/(.+)\.ts$/.exec(script);
  return m ? `bench/dist/${m[1]}.js` : script;
}

/** A node child process running compiled JavaScript (never tsx), with its memory sampled. */
export interface NodeChild {
  readonly name: string;
  readonly process: ChildProcess;
  readonly pid: number;
  readonly memory: MemorySampler;
  readonly logFile: string;
  /** Resolves with the exit code (or signal) when the child exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resolves with the first IPC message that satisfies `match`. Rejects if the child exits first. */
  message<T>(match: (m: unknown) => m is T, timeoutMs: number): Promise<T>;
  /** Resolves when a line of stdout/stderr matches. Rejects if the child exits first or after timeoutMs. */
  line(match: RegExp, timeoutMs: number): Promise<string>;
  /** Takes a last memory reading, sends SIGTERM, waits (SIGKILL after `graceMs`), returns the peak RSS in bytes. */
  stop(graceMs?: number): Promise<number>;
}

/**
 * Starts `node <compiled script>` from the repository root. The child is the process whose RSS a
 * scenario reports; the "idle child RSS" figure is the same node running an idle script.
 */
export function startNode(options: StartNodeOptions): NodeChild {
  mkdirSync(LOG_DIR, { recursive: true });
  const logFile = path.join(LOG_DIR, `${options.name}.log`);
  const log = createWriteStream(logFile);
  const profFlags: string[] = [];
  if (options.profileDir) {
    const dir = path.join(options.profileDir, options.name);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    profFlags.push('--cpu-prof', `--cpu-prof-dir=${dir}`);
  }
  const child = spawn(
    process.execPath,
    [...profFlags, ...(options.nodeFlags ?? []), compiledScript(options.script), ...(options.args ?? [])],
    {
      cwd: ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe', ...(options.ipc ? (['ipc'] as const) : [])],
    },
  );
  if (child.pid === undefined) throw new Error(`could not start ${options.script}`);
  live.add(child);
  child.on('exit', () => live.delete(child));
  const pid = child.pid;
  const memory = sampleMemory(pid);
  const lineWaiters = new Set<{ match: RegExp; resolve: (l: string) => void }>();
  let buffered = '';
  const onData = (chunk: Buffer) => {
    log.write(chunk);
    if (lineWaiters.size === 0) return;
    buffered += chunk.toString('utf8');
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const l of lines) {
      for (const w of lineWaiters) {
        if (w.match.test(l)) {
          lineWaiters.delete(w);
          w.resolve(l);
        }
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => {
      memory.stop();
      resolve({ code, signal });
    });
  });
  void exited.then(() => log.end());
  const exitedError = (what: string) =>
    exited.then(({ code, signal }) => {
      throw new Error(`${options.name} exited (code ${code}, signal ${signal}) before ${what}; see ${path.relative(ROOT, logFile)}`);
    });

  return {
    name: options.name,
    process: child,
    pid,
    memory,
    logFile,
    exited,
    message<T>(match: (m: unknown) => m is T, timeoutMs: number): Promise<T> {
      let timer: NodeJS.Timeout | undefined;
      let listener: ((m: unknown) => void) | undefined;
      const got = new Promise<T>((resolve, reject) => {
        listener = (m: unknown) => {
          if (match(m)) resolve(m);
        };
        child.on('message', listener);
        timer = setTimeout(() => reject(new Error(`${options.name}: no expected message within ${timeoutMs} ms`)), timeoutMs);
      });
      return Promise.race([got, exitedError('sending the expected message')]).finally(() => {
        clearTimeout(timer);
        if (listener) child.off('message', listener);
      });
    },
    line(match: RegExp, timeoutMs: number): Promise<string> {
      let timer: NodeJS.Timeout | undefined;
      let waiter: { match: RegExp; resolve: (l: string) => void } | undefined;
      const got = new Promise<string>((resolve, reject) => {
        waiter = { match, resolve };
        lineWaiters.add(waiter);
        timer = setTimeout(
          () => reject(new Error(`${options.name}: no line matching ${match} within ${timeoutMs} ms; see ${path.relative(ROOT, logFile)}`)),
          timeoutMs,
        );
      });
      return Promise.race([got, exitedError(`printing ${match}`)]).finally(() => {
        clearTimeout(timer);
        if (waiter) lineWaiters.delete(waiter);
      });
    },
    async stop(graceMs = 15_000): Promise<number> {
      memory.sample();
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(killer);
      }
      return memory.peakBytes();
    },
  };
}

const live = new Set<ChildProcess>();

/** Sends SIGTERM to every child still running (the runner calls it when it is interrupted). */
export function terminateChildren(): void {
  for (const c of live) c.kill('SIGTERM');
}

/** Bytes → "123 MiB". */
export function mib(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
}
