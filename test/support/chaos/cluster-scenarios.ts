import fs from 'node:fs';
import path from 'node:path';
import { type Admin, Kafka, logLevel } from 'kafkajs';
import { TOPICS, topicName } from '@notify/contract';
import { type KafkaCluster, startKafkaNode, stopKafkaNode } from '../../../scripts/kafka.mjs';
import { waitFor } from '../wait.js';
import type { Scenario, ScenarioContext } from './scenario.js';
import { DISPATCHER, RELAY, type Size, atProgress } from './scenarios.js';
import { stackTopics } from './stack.js';

// Fault scenarios on a local 3-node cluster (scripts/kafka.mjs startKafkaCluster): the stack's
// topics have 3 replicas and min.insync.replicas 2 (the cluster's defaults, which is also what
// `notify start` would create), so losing one broker must lose nothing and stop nothing for long.

/** The java pids of the cluster's running nodes (for the peak-RSS sampler). */
export function clusterPids(cluster: KafkaCluster): number[] {
  return cluster.nodes.flatMap((n) => {
    try {
      return [Number.parseInt(fs.readFileSync(path.join(cluster.dir, `node-${n.id}`, 'broker.pid'), 'utf8'), 10)];
    } catch {
      return [];
    }
  });
}

async function withAdmin<T>(ctx: ScenarioContext, fn: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = new Kafka({ clientId: 'chaos-cluster', brokers: [...ctx.brokers], logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    return await fn(admin);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/**
 * Waits until every partition of the stack's topics and of `__consumer_offsets` has all its
 * replicas in sync again (what an operator checks before restarting the next broker).
 */
async function fullIsr(ctx: ScenarioContext, timeoutMs = 120_000): Promise<void> {
  const topics = [...stackTopics(ctx.env), '__consumer_offsets'];
  await ctx.until(
    () =>
      withAdmin(ctx, async (admin) => {
        const { topics: meta } = await admin.fetchTopicMetadata({ topics });
        return meta.every((t) => t.partitions.every((p) => p.leader >= 0 && p.isr.length === p.replicas.length));
      }),
    'every replica back in sync',
    timeoutMs,
  );
}

/** The partition of `<prefix>.requests` with the most messages, and its leader. */
async function busiestRequestsPartition(ctx: ScenarioContext): Promise<{ partition: number; messages: number; leader: number }> {
  const topic = topicName(ctx.prefix, TOPICS.requests);
  return withAdmin(ctx, async (admin) => {
    const offsets = await admin.fetchTopicOffsets(topic);
    const busiest = offsets
      .map((o) => ({ partition: o.partition, messages: Number(o.high) - Number(o.low) }))
      .sort((a, b) => b.messages - a.messages)[0]!;
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const leader = topics[0]!.partitions.find((p) => p.partitionId === busiest.partition)!.leader;
    return { ...busiest, leader };
  });
}

/**
 * The skeleton every cluster scenario shares: relay and dispatcher in separate processes on the
 * cluster, 120 s to settle; the fault waits until every replica is in sync, then for a seeded
 * point of the load between `from` and `from + spread`, then strikes.
 */
function clusterScenario(
  cluster: KafkaCluster,
  name: string,
  size: Size,
  [from, spread]: readonly [number, number],
  strike: (ctx: ScenarioContext) => Promise<void>,
): Scenario {
  return {
    name: `cluster: ${name}`,
    ...size,
    brokers: cluster.brokers.split(','),
    processes: [RELAY, DISPATCHER],
    settleTimeoutMs: 120_000,
    async fault(ctx) {
      await fullIsr(ctx);
      await atProgress(ctx, from + ctx.random() * spread);
      await strike(ctx);
    },
  };
}

/** Starts a stopped broker again on its data, then waits until every replica has caught up. */
async function restartBroker(ctx: ScenarioContext, cluster: KafkaCluster, nodeId: number): Promise<void> {
  await startKafkaNode({ name: cluster.name, nodeId, log: () => {}, timeoutMs: 120_000 });
  ctx.note(`broker ${nodeId} back`);
  await fullIsr(ctx);
}

/**
 * SIGKILL the broker that leads the busiest partition of `<prefix>.requests`, at a seeded point
 * of the load; it stays down until notifications enqueued after the kill are delivered (the
 * stack carries on with two brokers), then starts again and catches up.
 */
export function leaderKillScenario(cluster: KafkaCluster, size: Size): Scenario {
  return clusterScenario(cluster, 'SIGKILL the busiest leader', size, [0.3, 0.2], async (ctx) => {
    const busiest = await busiestRequestsPartition(ctx);
    await stopKafkaNode({ name: cluster.name, nodeId: busiest.leader, signal: 'SIGKILL', log: () => {} });
    ctx.note(
      `SIGKILL broker ${busiest.leader}, leader of requests partition ${busiest.partition} (${busiest.messages} messages, the most)`,
    );
    const delivered = ctx.receiver.acceptedIds.size;
    // More distinct deliveries than notifications existed at the kill: some enqueued after it
    // went all the way through (published, consumed, delivered) on the two brokers left.
    const target = Math.min(ctx.total, ctx.enqueued() + Math.ceil(ctx.total * 0.05));
    await ctx.until(() => ctx.receiver.acceptedIds.size >= target, `${target} delivered with the broker down`, 180_000);
    ctx.note(`${ctx.receiver.acceptedIds.size - delivered} delivered with broker ${busiest.leader} down; starting it again`);
    await restartBroker(ctx, cluster, busiest.leader);
    ctx.note('every replica in sync');
  });
}

/**
 * A rolling restart: each broker in turn gets SIGTERM (a controlled shutdown: its partitions
 * move first), starts again on its data, and the next goes only once every replica is in sync.
 */
export function rollingRestartScenario(cluster: KafkaCluster, size: Size): Scenario {
  return clusterScenario(cluster, 'rolling restart of 3 brokers', size, [0.15, 0.1], async (ctx) => {
    for (const node of cluster.nodes) {
      const t0 = Date.now();
      await stopKafkaNode({ name: cluster.name, nodeId: node.id, signal: 'SIGTERM', log: () => {} });
      ctx.note(`broker ${node.id} stopped (SIGTERM) after ${Date.now() - t0} ms`);
      await restartBroker(ctx, cluster, node.id);
      ctx.note(`every replica in sync, ${Math.round((Date.now() - t0) / 1000)} s after broker ${node.id} went down`);
    }
  });
}

/** One broker (seeded choice) is down for `downMs` mid-run (SIGKILL), then starts again and catches up. */
export function brokerDownScenario(cluster: KafkaCluster, downMs: number, size: Size): Scenario {
  return clusterScenario(cluster, `one broker down ${Math.round(downMs / 1000)} s`, size, [0.15, 0.1], async (ctx) => {
    const node = cluster.nodes[Math.floor(ctx.random() * cluster.nodes.length)]!;
    await stopKafkaNode({ name: cluster.name, nodeId: node.id, signal: 'SIGKILL', log: () => {} });
    ctx.note(`SIGKILL broker ${node.id}`);
    const down = Date.now();
    const enqueuedAtStop = ctx.enqueued();
    const deliveredAtStop = ctx.receiver.acceptedIds.size;
    // The outage is a duration by definition; waitFor on the clock keeps the one waiting primitive.
    await waitFor(() => Date.now() - down >= downMs, { timeoutMs: downMs + 10_000, intervalMs: 200, message: `${downMs} ms down` });
    ctx.note(
      `starting broker ${node.id} again; while it was down: ${ctx.enqueued() - enqueuedAtStop} enqueued, ${ctx.receiver.acceptedIds.size - deliveredAtStop} delivered`,
    );
    await restartBroker(ctx, cluster, node.id);
    ctx.note('every replica in sync');
  });
}
