// The load generator of end-to-end's latency windows, in its own process with its own pg pool, so
// it shares neither an event loop nor a core's time slice with the receiver and the drain poller
// (in-process, at 500/s it could offer only 446/s on this machine and its own enqueue transactions
// dominated the slowest rows). Offers single-row enqueue transactions (notify) or boss.send()
// calls (pg-boss) at a fixed rate and reports each id's commit instant as wall-clock milliseconds
// (performance.timeOrigin + performance.now(): comparable across processes of one machine, unlike
// performance.now() alone). Its pool is opened and warmed before the window starts: left to open
// lazily, it started 32 PostgreSQL backends inside the window, each compiling the enqueue function
// and planning its statement on its first call, and the slowest 1 % of a 500/s window clustered in
// the window's first seconds (BENCHMARKS.md, session 24). The measured span is also run inside a
// steady load: the generator offers at the same rate for `leadInMs` before it and `leadOutMs` after
// it, and only the span's commits are measured (`committed`; the others are `unmeasured`). Without
// them the span's first and last few hundred milliseconds overlapped the generator's own start
// (its JIT, its first transactions) and stop (its pool's 32 backends ending, its output sent), and
// the slowest 1 % of a 500/s window clustered there (BENCHMARKS.md, session 36).
import PgBoss from 'pg-boss';
import { type OfferResult, createEnqueuer, offerAtRate, pgBossJob, webhookIntent } from '../lib/load.js';
import { type LoopDelay, loadSpanMs, measuredOffers, withLoopDelay } from '../lib/stats.js';
import { workerMain } from '../lib/worker.js';

/** Input of the worker. */
export interface LatencyLoadInput {
  readonly system: 'notify' | 'pg-boss';
  readonly url: string;
  readonly receiverUrl: string;
  /** pg-boss only: the queue to send to. */
  readonly queue?: string;
  readonly rate: number;
  /** The measured span. */
  readonly durationMs: number;
  /** Load at the same rate before the measured span, not measured. Default 0. */
  readonly leadInMs?: number;
  /** Load at the same rate after the measured span, not measured. Default 0. */
  readonly leadOutMs?: number;
  readonly maxInFlight: number;
}

/** Output of the worker. */
export interface LatencyLoadOutput {
  readonly offered: OfferResult;
  /** [id, commit instant in wall-clock ms] of each committed notification or job of the measured span. */
  readonly committed: readonly (readonly [string, number])[];
  /** Ids committed in the lead-in and the lead-out (delivered too, not measured). */
  readonly unmeasured: readonly string[];
  /** The generator's own event-loop delay over the window (ms): how late its ticks ran. */
  readonly loopDelayMs: LoopDelay;
}

const wallClock = () => performance.timeOrigin + performance.now();

/** Connections of each system's producer pool. Both are opened and warmed before the window (see `warm`). */
const CLIENTS = 32;
const PGBOSS_CLIENTS = 16;

type Op = (n: number, send: () => Promise<{ id: string }>) => Promise<void>;

async function offerNotify(input: LatencyLoadInput, op: Op) {
  const enqueuer = createEnqueuer(input.url, CLIENTS);
  try {
    await enqueuer.warm(webhookIntent(input.receiverUrl, 0));
    return await offerAtRate({
      rate: input.rate,
      durationMs: loadSpanMs(input),
      maxInFlight: input.maxInFlight,
      op: (n) => op(n, async () => ({ id: (await enqueuer.enqueueOne(webhookIntent(input.receiverUrl, n))).id })),
    });
  } finally {
    await enqueuer.close();
  }
}

async function offerPgBoss(input: LatencyLoadInput, op: Op) {
  // The producer side, as an application would run it: no maintenance, no schedules.
  const boss = new PgBoss({
    connectionString: input.url,
    max: PGBOSS_CLIENTS,
    supervise: false,
    schedule: false,
    application_name: 'notify-bench-pgboss-producer',
  });
  boss.on('error', () => {});
  await boss.start();
  try {
    // As for notify's pool: every connection opened, and the job table read on each, before the window.
    const db = boss.getDb();
    await Promise.all(
      Array.from({ length: PGBOSS_CLIENTS }, () =>
        db.executeSql('SELECT pg_sleep(0.05), (SELECT count(*) FROM pgboss.job WHERE name = $1 AND id IS NULL)', [input.queue]),
      ),
    );
    return await offerAtRate({
      rate: input.rate,
      durationMs: loadSpanMs(input),
      maxInFlight: input.maxInFlight,
      op: (n) =>
        op(n, async () => {
          const data = pgBossJob(n);
          await boss.send(input.queue!, data);
          return { id: data.id };
        }),
    });
  } finally {
    await boss.stop({ graceful: false, wait: true }).catch(() => {});
  }
}

workerMain(async (input: LatencyLoadInput): Promise<LatencyLoadOutput> => {
  const committed: (readonly [string, number])[] = [];
  const unmeasured: string[] = [];
  const { first, end } = measuredOffers(input.rate, input.leadInMs ?? 0, input.durationMs);
  const op: Op = async (n, send) => {
    const { id } = await send();
    if (n >= first && n < end) committed.push([id, wallClock()]);
    else unmeasured.push(id);
  };
  const { result: offered, loopDelayMs } = await withLoopDelay(() =>
    input.system === 'notify' ? offerNotify(input, op) : offerPgBoss(input, op),
  );
  return { offered, committed, unmeasured, loopDelayMs };
});
