import { type NodeChild, startNode } from './process.js';

/** Options of `startNotifyService`. */
export interface NotifyServiceOptions {
  /** Log file name and profile name. */
  readonly name: string;
  readonly databaseUrl: string;
  readonly brokers: readonly string[];
  readonly topicPrefix: string;
  /** Extra environment (retry settings, LOG_LEVEL, …); NOTIFY_WEBHOOK_ALLOW_CIDRS lets webhooks reach 127.0.0.1. */
  readonly env?: Readonly<Record<string, string>>;
  /** Run with `--cpu-prof` into this directory. */
  readonly cpuProfDir?: string | undefined;
  /** Default 120 s. */
  readonly startTimeoutMs?: number;
  /** Node flags for the service, before BENCH_SERVICE_NODE_FLAGS's (e.g. `--import` of a diagnostic preload). */
  readonly nodeFlags?: readonly string[];
}

/** A running `notify start` child. */
export interface NotifyService {
  readonly child: NodeChild;
  /** Base URL of its HTTP server. */
  readonly url: string;
}

/**
 * Starts the real service, every role in one process (`notify start`, the command a deployment
 * runs), as a child process whose RSS is sampled. Resolves when it prints that it listens, which
 * it does after the relay and the dispatcher have started.
 */
export async function startNotifyService(options: NotifyServiceOptions): Promise<NotifyService> {
  const child = startNode({
    name: options.name,
    script: 'packages/cli/dist/bin/notify.js',
    args: ['start'],
    env: {
      DATABASE_URL: options.databaseUrl,
      KAFKA_BROKERS: options.brokers.join(','),
      NOTIFY_TOPIC_PREFIX: options.topicPrefix,
      NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
      PORT: '0',
      NOTIFY_ADMIN_PORT: '0',
      LOG_LEVEL: 'info',
      ...options.env,
    },
    profileDir: options.cpuProfDir,
    // V8 flags for the service only (NODE_OPTIONS takes few of them), e.g. --trace-deopt.
    nodeFlags: [...(options.nodeFlags ?? []), ...(process.env.BENCH_SERVICE_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean)],
  });
  try {
    const line = await child.line(/listening on http:\/\/\S+/, options.startTimeoutMs ?? 120_000);
    const url = /(http:\/\/\S+)/.exec(line)![1]!;
    return { child, url };
  } catch (err) {
    await child.stop(5_000);
    throw err;
  }
}
