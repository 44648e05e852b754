/**
 * Overload and a long Kafka outage (issue 13, item 3), in `pnpm test:chaos`: the API sheds
 * instead of timing out, memory stays bounded (peak RSS in the table), everything accepted is
 * delivered afterwards; with Kafka down 5 minutes the backlog waits in PostgreSQL.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPrivateKafka, stopPrivateKafka } from '../../scripts/kafka.mjs';
import { MEASURED_API_CAPACITY_PER_SEC, type OverloadStats, overloadScenario } from '../support/chaos/overload.js';
import { runScenario } from '../support/chaos/scenario.js';
import { kafkaOutageScenario } from '../support/chaos/scenarios.js';
import { expectNothingLost } from '../support/chaos/report.js';
import { chaosSeed } from '../support/chaos/stack.js';

const seed = chaosSeed();

describe('overload', () => {
  it('5× the measured API capacity for 60 s: shed with Retry-After, no timeouts, everything accepted delivered', async ({ task }) => {
    const sink: { stats?: OverloadStats } = {};
    const ratePerSec = Number(process.env.CHAOS_OVERLOAD_RATE ?? 5 * MEASURED_API_CAPACITY_PER_SEC);
    const result = await runScenario(overloadScenario({ ratePerSec, durationMs: 60_000, seed }, sink));
    expectNothingLost(task, result);
    const stats = sink.stats!;
    expect(stats.accepted).toBeGreaterThan(0);
    expect(result.report.row.sent).toBe(stats.accepted);
    expect(stats.timeouts, 'requests that timed out instead of being shed').toBe(0);
    expect(stats.shedWithoutRetryAfter).toBe(0);
    expect(stats.other, 'answers other than 202, 503 and 429').toEqual({});
  }, 1_200_000);
});

describe('Kafka down 5 minutes under steady enqueue (a private broker)', () => {
  const name = `chaos5m${process.pid}`;
  let brokers: string[] = [];
  beforeAll(async () => {
    brokers = [(await startPrivateKafka({ name, log: () => {} })).brokers];
  }, 120_000);
  afterAll(async () => {
    await stopPrivateKafka({ name, log: () => {} });
  }, 60_000);

  it('the backlog waits in PostgreSQL; peak RSS bounded; all delivered after', async ({ task }) => {
    const result = await runScenario({
      ...kafkaOutageScenario(300_000, { notifications: 3600, spreadMs: 360_000, seed, brokerName: name, brokers }),
      settleTimeoutMs: 300_000,
    });
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(3600);
  }, 1_200_000);
});
