import pg from 'pg';
import { createEnqueuer, offerAtRate, warmUp, webhookIntent } from '../lib/load.js';
import { startReceiver } from '../lib/receiver.js';
import type { Figure } from '../lib/report.js';
import { startNotifyService } from '../lib/service.js';
import { latencySummary, sleep } from '../lib/stats.js';
import type { Scenario } from './types.js';

const FAILURE_RATE = 0.3;

/** One scheduled retry: when it was due (the `due-at` header of its retry message) and when it started (attempts.started_at). */
interface RetryRow {
  readonly due: Date;
  readonly started_at: Date | null;
}

/**
 * The receiver answers 503 to 30 % of requests (drawn per request, so a retry can fail again).
 * A steady offered rate of single-row enqueues, inside what the service sustains on this
 * machine, so lateness measures the retry machinery (delay topics, relay, consumer) rather than
 * an overload backlog. Lateness of each retry = started_at of attempt n+1 − the due time the
 * dispatcher wrote into the retry message after attempt n. Retries still pending past their due
 * time at the end count with their lateness so far (a lower bound), so a stuck retry cannot hide.
 */
export const retryHeavyScenario: Scenario = {
  name: 'retry-heavy',
  description: '30 % transient failures at a steady rate: delivered/s and retry lateness vs due time (p50/p99)',
  needsKafka: true,
  async run(ctx) {
    const rate = 200;
    const durationMs = ctx.quick ? 8_000 : 60_000;
    const settleMs = ctx.quick ? 4_000 : 15_000;
    const warmMs = ctx.quick ? 3_000 : 10_000;
    const db = await ctx.stack.freshDatabase('retry_heavy');
    const receiver = await startReceiver();
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on('error', () => {});
    try {
      const service = await startNotifyService({
        name: 'retry-heavy-notify',
        databaseUrl: db.url,
        brokers: await ctx.stack.kafkaBrokers(),
        topicPrefix: ctx.stack.topicPrefix('retry-heavy'),
        cpuProfDir: ctx.cpuProfDir,
      });
      try {
        // Warm-up without failures, so no retry of it is measured; then 30 % of requests fail.
        await warmUp(db.url, receiver.url, () => receiver.delivered(), { rate, durationMs: ctx.quick ? 3_000 : 5_000 });
        receiver.setFailureRate(FAILURE_RATE);
        const enqueuer = createEnqueuer(db.url, 8);
        ctx.log(`retry-heavy: ${rate}/s for ${durationMs / 1000} s, receiver fails ${FAILURE_RATE * 100} %`);
        const loadStart = new Date();
        const offered = await offerAtRate({ rate, durationMs, maxInFlight: 32, op: (n) => enqueuer.enqueueOne(webhookIntent(receiver.url, n)).then(() => {}) });
        const loadEnd = new Date();
        await enqueuer.close();
        await sleep(settleMs);
        const measuredAt = new Date();

        const windowStart = new Date(loadStart.getTime() + warmMs);
        const sent = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM notifications WHERE state = 'sent' AND sent_at >= $1 AND sent_at < $2", [
          windowStart,
          loadEnd,
        ]);
        const deliveredPerSec = sent.rows[0]!.n / ((loadEnd.getTime() - windowStart.getTime()) / 1000);
        const states = await pool.query<{ state: string; n: number }>('SELECT state, count(*)::int AS n FROM notifications GROUP BY state');
        const attempts = await pool.query<{ outcome: string; n: number }>('SELECT outcome, count(*)::int AS n FROM attempts GROUP BY outcome');
        const retries = await pool.query<RetryRow>(
          `SELECT (o.headers->>'due-at')::timestamptz AS due, a.started_at
             FROM outbox o
             LEFT JOIN attempts a ON a.notification_id = o.headers->>'notification-id' AND a.attempt = (o.headers->>'attempt')::int
            WHERE o.topic LIKE 'retry.%'`,
        );
        const lateness: number[] = [];
        let pendingOverdue = 0;
        let early = 0;
        for (const r of retries.rows) {
          if (r.started_at) {
            const ms = r.started_at.getTime() - r.due.getTime();
            if (ms < 0) early++;
            lateness.push(ms);
          } else if (r.due.getTime() < measuredAt.getTime()) {
            pendingOverdue++;
            lateness.push(measuredAt.getTime() - r.due.getTime());
          }
        }
        const late = latencySummary(lateness);
        const peak = await service.child.stop();
        const figures: Figure[] = [
          {
            id: 'delivered',
            label: `delivered/s at ${rate}/s offered, ${FAILURE_RATE * 100} % failing`,
            value: deliveredPerSec,
            unit: '/s',
            baseline: { label: 'offered', value: offered.achievedRate },
            ...(ctx.quick ? { note: `quick mode: ${durationMs / 1000} s` } : {}),
          },
          {
            id: 'lateness.p50',
            label: 'retry lateness vs due time, p50',
            value: late.p50,
            unit: 'ms',
          },
          {
            id: 'lateness.p99',
            label: 'retry lateness vs due time, p99',
            value: late.p99,
            unit: 'ms',
            targets: [{ on: 'value', op: '<=', value: 1_000 }],
            note: `${late.count} retries (${pendingOverdue} still pending past due), ${early} fired early, max ${Math.round(late.max)} ms`,
          },
          { id: 'early', label: 'retries that fired before their due time', value: early, unit: '', targets: [{ on: 'value', op: '<=', value: 0 }] },
        ];
        return {
          figures,
          peakRss: { 'notify start (all roles)': peak },
          details: {
            rate,
            durationMs,
            failureRate: FAILURE_RATE,
            offered,
            receiver: { requests: receiver.requests(), delivered: receiver.delivered() },
            states: states.rows,
            attempts: attempts.rows,
            lateness: late,
            pendingOverdue,
            early,
          },
        };
      } finally {
        await service.child.stop();
      }
    } finally {
      await pool.end();
      await receiver.close();
      await db.drop();
    }
  },
};
