import type { Admin } from 'kafkajs';
import type { Kysely } from 'kysely';
import type { PipelineProbe } from '@notify/api';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { outboxLag } from '@notify/relay';
import type { Clock } from '@notify/runtime';

/** What the console's pipeline probe reads. */
export interface PipelineProbeDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  /** A connected admin client (the readiness one). */
  readonly admin: Admin;
  /** The dispatcher consumer group (`<prefix>.dispatcher`). */
  readonly groupId: string;
  /** The topics that group consumes. */
  readonly topics: readonly string[];
}

/**
 * The console's outbox and consumer lag, built here because only the notify command wires roles:
 * the outbox lag is the relay's `outboxLag` (the query behind notify_outbox_lag_seconds); the
 * consumer lag per topic is the sum over partitions of the newest offset minus the group's
 * committed offset (a partition the group never committed counts from its low watermark).
 */
export function createPipelineProbe(deps: PipelineProbeDeps): PipelineProbe {
  const exec = fromKysely(deps.db);
  return {
    outboxLag: () => outboxLag(exec, { now: deps.clock.now() }),
    async consumerLag() {
      const committed = await deps.admin.fetchOffsets({ groupId: deps.groupId, topics: [...deps.topics] });
      return Promise.all(
        committed.map(async ({ topic, partitions }) => {
          const ends = await deps.admin.fetchTopicOffsets(topic);
          let lag = 0;
          for (const end of ends) {
            const at = partitions.find((p) => p.partition === end.partition)?.offset ?? '-1';
            const from = Number(at) >= 0 ? Number(at) : Number(end.low);
            lag += Math.max(0, Number(end.high) - from);
          }
          return { topic, lag };
        }),
      );
    },
  };
}
