/**
 * Overload and a long Kafka outage (issue 13, item 3), in `pnpm test:chaos`: the API sheds
 * instead of timing out, memory stays bounded (peak RSS in the table), everything accepted is
 * delivered afterwards; with Kafka down 5 minutes the backlog waits in PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateKafka, stopPrivateKafka } from '../../scripts/kafka.mjs';
import { type OverloadStats, overloadScenario, peakRssOf } from '../support/chaos/overload.js';
import { runScenario } from '../support/chaos/scenario.js';
import { kafkaOutageScenario } from '../support/chaos/scenarios.js';
import { expectNothingLost } from '../support/chaos/report.js';
import { chaosSeed } from '../support/chaos/stack.js';

const seed = chaosSeed();

describe('overload', () => {
  it('5× the API capacity measured in the same run, for 60 s: shed with Retry-After, no timeouts, everything accepted delivered', async ({
    task,
  }) => {
    const sink: { stats?: OverloadStats } = {};
    const fixed = process.env.CHAOS_OVERLOAD_RATE;
    const result = await runScenario(
      overloadScenario({ factor: 5, durationMs: 60_000, seed, ...(fixed ? { ratePerSec: Number(fixed) } : {}) }, sink),
    );
    expectNothingLost(task, result);
    const stats = sink.stats!;
    expect(stats.accepted).toBeGreaterThan(0);
    expect(stats.shed, 'an overload of 5× capacity is shed in part').toBeGreaterThan(0);
    expect(result.report.row.sent).toBe(stats.accepted + stats.calibrationAccepted);
    expect(stats.timeouts, 'requests that timed out instead of being shed').toBe(0);
    expect(stats.shedWithoutRetryAfter).toBe(0);
    expect(stats.other, 'answers other than 202, 503 and 429').toEqual({});
  }, 1_200_000);
});

describe('Kafka down 5 minutes under steady enqueue (a private broker)', () => {
  const name = `chaos5m${process.pid}`;
  let brokers: string[] = [];
  // Started before the load (and restarted by the scenario) with the private broker's 180 s start deadline.
  beforeAll(async () => {
    brokers = [(await startPrivateKafka({ name, log: () => {} })).brokers];
  }, 240_000);
  afterAll(async () => {
    await stopPrivateKafka({ name, log: () => {} });
  }, 60_000);

  it('the backlog waits in PostgreSQL; peak RSS bounded; all delivered after', async ({ task }) => {
    const notifications = 3600;
    const spreadMs = 360_000;
    const outageMs = 300_000;
    const base = kafkaOutageScenario(outageMs, { notifications, spreadMs, seed, brokerName: name, brokers });
    // The backlog: outbox rows not yet published, sampled from PostgreSQL while the scenario runs.
    let maxUnpublished = 0;
    let rss: Record<string, number> = {};
    const result = await runScenario({
      ...base,
      settleTimeoutMs: 300_000,
      async fault(ctx) {
        const sample = () =>
          ctx.db.pool
            .query<{ n: number }>('SELECT count(*)::int AS n FROM outbox WHERE published_at IS NULL')
            .then(({ rows }) => void (maxUnpublished = Math.max(maxUnpublished, rows[0]!.n)))
            .catch(() => {});
        const sampler = setInterval(() => void sample(), 2_000);
        try {
          await base.fault!(ctx);
        } finally {
          clearInterval(sampler);
        }
        ctx.note(`outbox rows unpublished at most ${maxUnpublished} (the backlog in PostgreSQL)`);
        rss = peakRssOf(ctx, ['relay', 'dispatcher']);
      },
    });
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(notifications);
    // About outageMs / spreadMs of the load is enqueued while the broker is down: it waits in the outbox.
    expect(maxUnpublished).toBeGreaterThan(0.6 * notifications * (outageMs / spreadMs));
    for (const [proc, mib] of Object.entries(rss)) expect(mib, `peak RSS of ${proc}`).toBeLessThan(512);
  }, 1_800_000);
});
