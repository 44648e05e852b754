import { type NodeChild, startNode } from './process.js';

/** The message a worker sends back when it is done. */
interface WorkerResult<O> {
  readonly type: 'bench-result';
  readonly ok: boolean;
  readonly output?: O;
  readonly error?: string;
  /** process.resourceUsage().maxRSS of the worker, in bytes: its exact peak RSS. */
  readonly maxRssBytes: number;
}

function isResult(m: unknown): m is WorkerResult<unknown> {
  return typeof m === 'object' && m !== null && (m as { type?: unknown }).type === 'bench-result';
}

/**
 * Child side: call at the top level of a worker script. Waits for its input over IPC, runs `fn`,
 * sends the output and the process's peak RSS back, and exits.
 */
export function workerMain<I, O>(fn: (input: I) => Promise<O>): void {
  process.once('message', (input: I) => {
    fn(input).then(
      (output) => send({ type: 'bench-result', ok: true, output, maxRssBytes: process.resourceUsage().maxRSS * 1024 }),
      (err: unknown) =>
        send({
          type: 'bench-result',
          ok: false,
          error: err instanceof Error ? (err.stack ?? err.message) : String(err),
          maxRssBytes: process.resourceUsage().maxRSS * 1024,
        }),
    );
  });
  function send(result: WorkerResult<O>): void {
    process.send!(result, () => {
      process.disconnect();
      process.exit(0);
    });
  }
}

/** Parent side: runs a worker script in its own node process and returns its output and peak RSS. */
export async function runWorker<I, O>(
  name: string,
  script: string,
  input: I,
  options: { timeoutMs: number; nodeFlags?: readonly string[]; env?: Record<string, string>; profileDir?: string | undefined },
): Promise<{ output: O; peakRssBytes: number; child: NodeChild }> {
  const child = startNode({
    name,
    script,
    ipc: true,
    profileDir: options.profileDir,
    ...(options.nodeFlags ? { nodeFlags: options.nodeFlags } : {}),
    ...(options.env ? { env: options.env } : {}),
  });
  try {
    const reply = child.message(isResult, options.timeoutMs);
    child.process.send(input as object);
    const result = await reply;
    if (!result.ok) throw new Error(`${name} failed: ${result.error}`);
    await child.exited;
    return { output: result.output as O, peakRssBytes: Math.max(result.maxRssBytes, child.memory.peakBytes()), child };
  } finally {
    await child.stop(2_000);
  }
}
