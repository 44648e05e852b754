import { buildDeliveryRequest } from '@notify/contract';
import { fromKysely, outboxInsert } from '@notify/outbox';
import { type Clock, type Logger, createPeriodicService, errorMessage } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import type { Kysely } from 'kysely';
import type { DispatcherConfig } from './config.js';
import type { DispatcherEvents } from './events.js';
import { notificationListOverdue } from './sql/notification-list-overdue.js';
import { notificationReschedule } from './sql/notification-reschedule.js';
import { outboxLatestRequests } from './sql/outbox-latest-requests.js';
import type { ConsumerProgress } from './consumer-progress.js';

/** What the repair sweep needs. */
export interface RepairSweepDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: DispatcherEvents;
  /**
   * Tells consumer lag from loss (`createKafkaConsumerProgress`). Without it, every overdue
   * notification whose request is not waiting in the outbox is re-published.
   */
  readonly progress?: ConsumerProgress;
}

/** The safety net against a lost message. */
export interface RepairSweep {
  /** One pass: re-publishes up to `repairBatchSize` overdue notifications; returns how many. */
  runOnce(): Promise<number>;
  /** Runs `runOnce` every `repairIntervalMs` until `stop`. */
  start(): void;
  /** Stops the timer and waits for a running pass. */
  stop(): Promise<void>;
}

/**
 * A queued notification whose next attempt is overdue by more than `repairAfterMs` has, most
 * likely, no message carrying it (lost, or dead-lettered by mistake). The sweep writes a new
 * delivery request for attempt `attempts + 1`, due now, through the outbox, and moves
 * `next_attempt_at` to now so the next pass leaves it alone for another `repairAfterMs`. If the
 * original message was only late, whichever arrives second is skipped by the handler's guard.
 *
 * How it tells lag from loss: a notification whose request is still unpublished in the outbox is
 * waiting for the relay (skipped by `notificationListOverdue`). One whose newest request was
 * published is re-published only when the consumer group has committed past that request
 * (`deps.progress`); otherwise the request is still waiting behind consumer lag, and re-publishing
 * would only add load to a backlogged system. One with no request left in the outbox (lost, or
 * purged after NOTIFY_OUTBOX_RETENTION_MS) is re-published.
 * Every dispatcher instance runs it; SKIP LOCKED keeps two passes from taking the same rows.
 */
export function createRepairSweep(
  config: Pick<DispatcherConfig, 'repairAfterMs' | 'repairIntervalMs' | 'repairBatchSize'>,
  deps: RepairSweepDeps,
): RepairSweep {
  const runOnce = async (): Promise<number> => {
    const now = deps.clock.now();
    const count = await deps.db.transaction().execute(async (trx) => {
      const db = fromKysely(trx);
      const listed = await notificationListOverdue(db, {
        dueBefore: new Date(now.getTime() - config.repairAfterMs),
        limit: config.repairBatchSize,
      });
      const overdue = deps.progress ? await lostOnly(db, deps.progress, listed) : listed;
      if (listed.length > overdue.length) {
        deps.events.emit('repairDeferred', { count: listed.length - overdue.length });
        deps.logger.info(
          { count: listed.length - overdue.length },
          'repair sweep: overdue requests still wait behind consumer lag; not re-published',
        );
      }
      if (overdue.length === 0) return 0;
      await outboxInsert(db, { messages: overdue.map((n) => buildDeliveryRequest(n, n.attempts + 1, now)) });
      return notificationReschedule(db, { ids: overdue.map((n) => n.id), nextAttemptAt: now });
    });
    if (count > 0) {
      deps.events.emit('repaired', { count });
      deps.logger.warn({ count, repairAfterMs: config.repairAfterMs }, 'repair sweep re-published overdue notifications');
    }
    return count;
  };
  const service = createPeriodicService({
    name: 'repair sweep',
    intervalMs: config.repairIntervalMs,
    run: runOnce,
    onError: (error) => {
      deps.events.emit('consumerError', { phase: 'repair', error });
      deps.logger.error({ err: errorMessage(error) }, 'repair sweep failed; will try again');
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

/** The notifications among `overdue` whose newest published request the consumer group has read past, or that have none left in the outbox. */
async function lostOnly<N extends { readonly id: string }>(
  db: Parameters<typeof outboxLatestRequests>[0],
  progress: ConsumerProgress,
  overdue: readonly N[],
): Promise<N[]> {
  if (overdue.length === 0) return [];
  const latest = new Map(
    (await outboxLatestRequests(db, { notificationIds: overdue.map((n) => n.id) })).map((r) => [r.notification_id, r]),
  );
  const published = overdue.filter((n) => latest.has(n.id));
  const answers = await progress.consumedPast(
    published.map((n) => {
      const r = latest.get(n.id)!;
      return { topic: r.topic, key: r.key, publishedAt: new Date(r.published_at) };
    }),
  );
  const consumed = new Set(published.filter((_, i) => answers[i]).map((n) => n.id));
  return overdue.filter((n) => !latest.has(n.id) || consumed.has(n.id));
}
