// The peer baseline's service process: a pg-boss 10 worker that POSTs each job to the same local
// receiver our webhook provider posts to, with a payload of the same shape and size. Receives its
// settings over IPC, answers `ready`, runs until SIGTERM.
import http from 'node:http';
import PgBoss from 'pg-boss';

/** Settings of the worker. */
export interface PgBossWorkerInput {
  readonly connectionString: string;
  readonly queue: string;
  readonly receiverUrl: string;
  /** `boss.work()` registrations; each is its own fetch loop. */
  readonly workers: number;
  /** Jobs fetched per loop iteration. */
  readonly batchSize: number;
  /** POSTs running at once per worker (our dispatcher's in-flight bound is 32 in total). */
  readonly concurrencyPerWorker: number;
  /** pg-boss polls; 0.5 s is its minimum. */
  readonly pollingIntervalSeconds: number;
  /** Pool size of pg-boss's own connection pool. */
  readonly poolSize: number;
}

/** Job data: what our notification carries to the webhook. */
export interface BenchJob {
  readonly id: string;
  readonly tenant_id: string;
  readonly body: string;
  readonly data: Record<string, unknown>;
  readonly created_at: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function post(url: URL, job: BenchJob): Promise<void> {
  const body = JSON.stringify({ ...job, metadata: {}, attempt: 1, timestamp: new Date().toISOString() });
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'webhook-id': job.id },
      },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode! >= 200 && res.statusCode! < 300 ? resolve() : reject(new Error(`receiver answered ${res.statusCode}`)),
        );
      },
    );
    req.setTimeout(2_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs `fn` over `items` with at most `limit` at once; rejects if any does (pg-boss then fails the batch). */
async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]!);
    }),
  );
}

process.once('message', (input: PgBossWorkerInput) => void runWorker(input));

async function runWorker(input: PgBossWorkerInput): Promise<void> {
  const boss = new PgBoss({
    connectionString: input.connectionString,
    max: input.poolSize,
    application_name: 'notify-bench-pgboss-worker',
  });
  boss.on('error', (err) => process.stderr.write(`pg-boss: ${err.message}\n`));
  await boss.start();
  const url = new URL(input.receiverUrl);
  for (let i = 0; i < input.workers; i++) {
    await boss.work<BenchJob>(input.queue, { batchSize: input.batchSize, pollingIntervalSeconds: input.pollingIntervalSeconds }, (jobs) =>
      forEachLimited(jobs, input.concurrencyPerWorker, (job) => post(url, job.data)),
    );
  }
  process.send!({ type: 'ready' });
  process.once('SIGTERM', () => {
    void boss.stop({ graceful: true, timeout: 5_000, wait: true }).finally(() => process.exit(0));
  });
}
