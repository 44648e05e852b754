import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { waitFor } from './wait.js';

/** The repository root: `notify` runs from there, like `pnpm notify`. */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The compiled command, as users run it (the integration project's global setup builds it). */
const BIN = 'packages/cli/dist/bin/notify.js';

/** The environment of a child `notify`: the parent's PATH and nothing of its NOTIFY_* settings. */
function childEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  // A free admin port: several `notify start` children run at once, and 9464 may be taken.
  const base: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', NOTIFY_ADMIN_PORT: '0' };
  return { ...base, ...env };
}

/** Runs `notify <args>` to completion (the compiled `node packages/cli/dist/bin/notify.js`, what `pnpm notify` runs). */
export function runNotifyCli(
  args: readonly string[],
  env: Record<string, string>,
  // Generous: it only matters when something hangs, and a child's start-up on a loaded 2-core
  // machine has taken more than 30 s (the suite under a chaos run, load average 28).
  timeoutMs = 50_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: childEnv(env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`notify ${args.join(' ')} did not finish in ${timeoutMs} ms\n${stdout}\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A long-running `notify start` child. */
export interface NotifyServer {
  readonly child: ChildProcess;
  /** Where it listens, from its "listening on" line (the API with the api role, else the admin port). */
  readonly url: string;
  /** Its admin port (/healthz, /readyz, /metrics), from the same line. */
  readonly adminUrl: string;
  /** Everything it wrote to stdout so far (JSON log lines and the "listening" line). */
  output(): string;
  /** SIGTERM, then the exit code (SIGKILL after `timeoutMs`). */
  stop(timeoutMs?: number): Promise<number | null>;
}

/** The admin URL in `notify start`'s "listening" line (packages/cli/src/main.ts). */
export function adminUrlOf(output: string): string {
  const url = /\/metrics (?:listening )?on (http:\/\/\S+)/.exec(output)?.[1];
  if (!url) throw new Error('no admin URL in the output of notify start');
  return url;
}

/** Starts `notify start` and waits for its "listening on" line. Rejects with its output when it exits first. */
export async function startNotifyProcess(args: readonly string[], env: Record<string, string>, timeoutMs = 60_000): Promise<NotifyServer> {
  const child = spawn(process.execPath, [BIN, 'start', ...args], { cwd: ROOT, env: childEnv(env) });
  let stdout = '';
  let stderr = '';
  let exited: number | null | undefined;
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const closed = new Promise<number | null>((resolve) => child.on('close', (code) => resolve((exited = code))));
  let url: string;
  try {
    url = await waitFor(
      () => {
        if (exited !== undefined) throw new Error(`notify start exited with ${exited}: ${stderr}`);
        return /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
      },
      { timeoutMs, intervalMs: 50, message: 'notify start to print where it listens' },
    );
  } catch (err) {
    child.kill('SIGKILL');
    throw new Error(`${(err as Error).message}\n--- stdout\n${stdout.slice(-4000)}\n--- stderr\n${stderr.slice(-4000)}`, { cause: err });
  }
  return {
    child,
    url,
    adminUrl: adminUrlOf(stdout),
    output: () => stdout,
    async stop(stopTimeoutMs = 20_000) {
      if (exited !== undefined) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), stopTimeoutMs);
      const code = await closed;
      clearTimeout(timer);
      return code;
    },
  };
}
