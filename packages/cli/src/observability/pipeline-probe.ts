import { topicName } from '@notify/contract';
import { type DispatcherConfig, deliveryLanes } from '@notify/dispatcher';
import type { Admin } from 'kafkajs';
import type { Kysely } from 'kysely';
import type { PipelineProbe } from '@notify/api';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { outboxLag } from '@notify/relay';
import { type Clock, type Logger, withTimeout } from '@notify/runtime';

/** What the console's pipeline probe reads. */
export interface PipelineProbeDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  /** The admin client, connected (the readiness one, or a lazily connected one in a process without the relay and the dispatcher). */
  readonly admin: () => Promise<Admin>;
  /** How long `consumerLag` waits for Kafka before it fails (default 2000): the console's page must not hang while Kafka is down. */
  readonly timeoutMs?: number;
  /**
   * The dispatcher's consumer groups, each with the topics it reads (full names): `<prefix>.dispatcher`
   * (requests and the delay topics) and `<prefix>.dispatcher.high` (requests.high). A topic's lag is
   * its own group's: read with another group's offsets, a topic counts every message ever written.
   */
  readonly groups: readonly { readonly groupId: string; readonly topics: readonly string[] }[];
  /** Where `consumerLag` says that Kafka stopped answering and that it answers again (`lagReachabilityLog`); omit for silence. */
  readonly logger?: Logger;
  /** The least time between two "unreachable" warnings (default 300000): a flapping broker logs one pair, not one per flap. */
  readonly reachabilityLogEveryMs?: number;
}

/** What `consumerLag` reports of each reading (`lagReachabilityLog`). */
interface ReachabilityLog {
  failed(err: unknown): void;
  succeeded(): void;
}

/**
 * One warning when the lag readings start failing, one info when they work again, instead of a
 * line per reading (the metrics read on every scrape, the console on every page view). Warnings
 * are at least `everyMs` apart: a failure within `everyMs` of the last warning is not logged, and
 * neither is the recovery that follows it (an info comes only after a logged warning).
 */
/** @internal Exported for its tests. */
export function lagReachabilityLog(logger: Logger, clock: Clock, everyMs: number): ReachabilityLog {
  let down = false;
  let warned = false;
  let lastWarnAt = Number.NEGATIVE_INFINITY;
  return {
    failed(err) {
      if (down) return;
      down = true;
      const now = clock.now().getTime();
      warned = now - lastWarnAt >= everyMs;
      if (!warned) return;
      lastWarnAt = now;
      logger.warn(
        { err: (err as Error)?.message ?? String(err) },
        'consumer lag: Kafka does not answer; notify_kafka_consumer_lag_messages and the console show no lag until it does',
      );
    },
    succeeded() {
      if (!down) return;
      down = false;
      if (warned) logger.info({}, 'consumer lag: Kafka answers again');
    },
  };
}

/**
 * The console's outbox and consumer lag, built here because only the notify command wires roles:
 * the outbox lag is the relay's `outboxLag` (the query behind notify_outbox_lag_seconds); the
 * consumer lag per topic is the sum over partitions of the newest offset minus the committed
 * offset of the group that reads it (a partition the group never committed counts from its low
 * watermark).
 */
export function createPipelineProbe(deps: PipelineProbeDeps): PipelineProbe {
  const exec = fromKysely(deps.db);
  const timeoutMs = deps.timeoutMs ?? 2_000;
  const reachability = deps.logger && lagReachabilityLog(deps.logger, deps.clock, deps.reachabilityLogEveryMs ?? 300_000);
  const consumerLag = async () => {
    const admin = await deps.admin();
    const committed = (
      await Promise.all(deps.groups.map(({ groupId, topics }) => admin.fetchOffsets({ groupId, topics: [...topics] })))
    ).flat();
    return Promise.all(
      committed.map(async ({ topic, partitions }) => {
        const ends = await admin.fetchTopicOffsets(topic);
        let lag = 0;
        for (const end of ends) {
          const at = partitions.find((p) => p.partition === end.partition)?.offset ?? '-1';
          const from = Number(at) >= 0 ? Number(at) : Number(end.low);
          lag += Math.max(0, Number(end.high) - from);
        }
        return { topic, lag };
      }),
    );
  };
  return {
    outboxLag: () => outboxLag(exec, { now: deps.clock.now() }),
    consumerLag: async () => {
      try {
        const lag = await withTimeout(consumerLag(), timeoutMs, () => new Error(`Kafka did not answer within ${timeoutMs} ms`));
        reachability?.succeeded();
        return lag;
      } catch (err) {
        reachability?.failed(err);
        throw err;
      }
    },
  };
}

/** `PipelineProbeDeps.groups` of a dispatcher with `config`: each lane's group and the topics it reads (not events, not the DLQ). */
export function dispatcherLagGroups(config: DispatcherConfig) {
  return deliveryLanes(config).map((lane) => ({ groupId: lane.groupId, topics: lane.topics.map((s) => topicName(config.topicPrefix, s)) }));
}
