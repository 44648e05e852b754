/**
 * The full fault suite (`pnpm test:chaos`): every scenario runs N notifications through the real
 * stack (`notify start` child processes on real PostgreSQL and Kafka) while a fault strikes at
 * seeded moments, then the audit (test/support/chaos/audit.ts). Each test attaches its row to the
 * table printed at the end of the run. CHAOS_SEED replays a run's fault schedule.
 */
import type { KafkaMessage } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS } from '@notify/contract';
import { startPrivateKafka, stopPrivateKafka } from '../../scripts/kafka.mjs';
import { runScenario } from '../support/chaos/scenario.js';
import {
  POISON,
  hostileReceiverScenario,
  kafkaOutageScenario,
  longTransactionScenario,
  pgTerminateScenario,
  type OutageProbe,
  failoverScenario,
  poisonScenario,
  postgresRestartScenario,
  rebalanceScenario,
  sigkillScenario,
} from '../support/chaos/scenarios.js';
import { expectNothingLost } from '../support/chaos/report.js';
import { chaosSeed } from '../support/chaos/stack.js';
import { type PrivatePostgres, startPrivatePostgres } from '../support/chaos/private-postgres.js';

// One seed for the whole run, printed with every scenario: CHAOS_SEED=<it> replays every fault schedule.
const seed = chaosSeed();
const size = (notifications: number, spreadMs: number) => ({ notifications, spreadMs, seed });

describe('faults against the real stack', () => {
  it('SIGKILL the relay 4 times mid-run', async ({ task }) => {
    const result = await runScenario(sigkillScenario('relay', 4, size(2000, 30_000)));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
  }, 600_000);

  it('SIGKILL the dispatcher 3 times mid-run', async ({ task }) => {
    const result = await runScenario({ ...sigkillScenario('dispatcher', 3, size(2000, 30_000)), settleTimeoutMs: 120_000 });
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
  }, 600_000);

  it('failover: one of two dispatchers SIGKILLed, the other takes its partitions', async ({ task }) => {
    const result = await runScenario(failoverScenario(size(2000, 30_000)));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
  }, 600_000);

  it('pg_terminate_backend on every service connection, 5 times', async ({ task }) => {
    const result = await runScenario(pgTerminateScenario(5, size(2000, 30_000)));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
  }, 600_000);

  it('receivers that hang past the timeout, reset connections, answer slowly', async ({ task }) => {
    const result = await runScenario(hostileReceiverScenario(size(1000, 20_000)));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(1000);
    // Every duplicate here follows an attempt recorded as failed although the receiver had the
    // request (an answer after the send timeout): none is a redelivery of an attempt.
    expect(result.report.row.redelivered).toBe(0);
    // No Kafka fault here: the dispatcher joins its group once and never rebalances (churn would show here first).
    expect(result.report.row.rejoins, 'consumer group joins beyond the first').toBe(0);
  }, 600_000);

  it('a consumer group rebalance during delivery: dispatchers join and leave', async ({ task }) => {
    const result = await runScenario(rebalanceScenario(size(2000, 30_000)));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
  }, 600_000);

  it('a 60 s transaction open elsewhere on the server: nothing lost, deliveries go on meanwhile', async ({ task }) => {
    const result = await runScenario(longTransactionScenario(60_000, size(2000, 40_000)));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
  }, 600_000);

  it('poison messages in the request and retry topics', async ({ task }) => {
    const sink: { dlq?: KafkaMessage[] } = {};
    const result = await runScenario(poisonScenario(size(500, 15_000), sink));
    expectNothingLost(task, result);
    const dlq = sink.dlq ?? [];
    for (const p of POISON) {
      expect(dlq.filter((m) => m.headers?.['chaos-poison']?.toString() === p.name).length, `dead letters for "${p.name}"`).toBe(2);
    }
    expect(dlq.every((m) => (m.headers?.[HEADERS.dlqReason]?.length ?? 0) > 0)).toBe(true);
    expect(result.report.row.sent).toBe(500);
  }, 600_000);
});

describe('Kafka outage (a private broker: the shared one is never stopped)', () => {
  const name = `chaos${process.pid}`;
  let brokers: string[] = [];
  beforeAll(async () => {
    brokers = [(await startPrivateKafka({ name, log: () => {} })).brokers];
  }, 120_000);
  afterAll(async () => {
    await stopPrivateKafka({ name, log: () => {} });
  }, 60_000);

  it('the broker stops for 30 s mid-run and comes back', async ({ task }) => {
    const result = await runScenario(kafkaOutageScenario(30_000, { ...size(1500, 40_000), brokerName: name, brokers }));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(1500);
  }, 600_000);
});

describe('PostgreSQL restart (a private server: the shared one is never stopped)', () => {
  let server: PrivatePostgres | undefined;
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.destroy();
  }, 60_000);

  it('the server stops for 20 s under load: every role reconnects, the API answers 503 meanwhile', async ({ task }) => {
    const sink: { probes?: OutageProbe[] } = {};
    const result = await runScenario(postgresRestartScenario(20_000, { ...size(2000, 30_000), server: server! }, sink));
    expectNothingLost(task, result);
    expect(result.report.row.sent).toBe(2000);
    const probes = sink.probes ?? [];
    expect(probes.length).toBeGreaterThan(10);
    for (const p of probes) {
      expect(p, 'an API answer while PostgreSQL was down').toMatchObject({
        status: 503,
        code: 'database_unreachable',
        contentType: expect.stringContaining('application/problem+json') as unknown,
        retryAfter: expect.stringMatching(/^\d+$/) as unknown,
      });
    }
  }, 600_000);
});
