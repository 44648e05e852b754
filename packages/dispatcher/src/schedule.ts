import { TOPICS, buildDeliveryRequest } from '@notify/contract';
import { fromKysely, outboxInsert } from '@notify/outbox';
import { type Clock, type Logger, createPeriodicService, errorMessage } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import type { Kysely } from 'kysely';
import type { DispatcherConfig } from './config.js';
import type { DispatcherEvents } from './events.js';
import { tierFor } from './retry/delay-topics.js';
import { notificationReleaseHeld } from './sql/notification-release-held.js';

/** What the schedule service needs. */
export interface ScheduleServiceDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: DispatcherEvents;
}

/** Hands scheduled notifications (`send_at`) to Kafka shortly before they are due. */
export interface ScheduleService {
  /** One pass: releases up to `scheduleBatchSize` held notifications due within the look-ahead; returns how many. */
  runOnce(): Promise<number>;
  /** Runs `runOnce` every `scheduleIntervalMs` until `stop`. */
  start(): void;
  /** Stops the timer and waits for a running pass. */
  stop(): Promise<void>;
}

/**
 * A scheduled notification waits in PostgreSQL (`held_until`), not in Kafka: a partition of a
 * delay topic is read in due order, so a message due in 30 days at its head would hold up every
 * retry behind it. Each pass takes the held notifications due within `scheduleLookaheadMs` and
 * writes, through the outbox and in the same transaction, the delivery request for attempt
 * `attempts + 1` due at `send_at`, on the delay topic that fits the remaining wait (`tierFor`,
 * as a retry), or on the request topic (`requests.high` for priority high) when it is already due. From there the never-early rule
 * of the delay topics applies: the consumer starts it only once `due_at` has passed.
 * Every dispatcher instance runs it; SKIP LOCKED keeps two passes from taking the same rows.
 */
export function createScheduleService(
  config: Pick<DispatcherConfig, 'tiers' | 'scheduleIntervalMs' | 'scheduleLookaheadMs' | 'scheduleBatchSize'>,
  deps: ScheduleServiceDeps,
): ScheduleService {
  const runOnce = async (): Promise<number> => {
    const now = deps.clock.now();
    const released = await deps.db.transaction().execute(async (trx) => {
      const db = fromKysely(trx);
      const due = await notificationReleaseHeld(db, {
        dueBy: new Date(now.getTime() + config.scheduleLookaheadMs),
        limit: config.scheduleBatchSize,
      });
      if (due.length === 0) return 0;
      const messages = due.map((n) => {
        const dueAt = new Date(n.next_attempt_at);
        const remainingMs = dueAt.getTime() - now.getTime();
        const topic =
          remainingMs > 0 ? tierFor(config.tiers, remainingMs).topic : n.priority === 'high' ? TOPICS.requestsHigh : TOPICS.requests;
        return buildDeliveryRequest(n, n.attempts + 1, dueAt, topic);
      });
      await outboxInsert(db, { messages });
      return due.length;
    });
    if (released > 0) deps.logger.debug({ count: released }, 'scheduled notifications released to Kafka');
    return released;
  };
  const service = createPeriodicService({
    name: 'schedule service',
    intervalMs: config.scheduleIntervalMs,
    run: runOnce,
    onError: (error) => {
      deps.events.emit('consumerError', { phase: 'schedule', error });
      deps.logger.error({ err: errorMessage(error) }, 'schedule service failed; will try again');
    },
  });
  return {
    runOnce,
    start: () => service.start(),
    async stop() {
      await service.stop();
    },
  };
}
