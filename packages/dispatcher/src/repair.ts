import { buildDeliveryRequest } from '@notify/contract';
import { fromKysely, outboxInsert } from '@notify/outbox';
import { type Clock, type Logger, createPeriodicService, errorMessage } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import type { Kysely } from 'kysely';
import type { DispatcherConfig } from './config.js';
import type { DispatcherEvents } from './events.js';
import { notificationListOverdue } from './sql/notification-list-overdue.js';
import { notificationReschedule } from './sql/notification-reschedule.js';

/** What the repair sweep needs. */
export interface RepairSweepDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: DispatcherEvents;
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
 * Every dispatcher instance runs it; SKIP LOCKED keeps two passes from taking the same rows.
 */
export function createRepairSweep(config: Pick<DispatcherConfig, 'repairAfterMs' | 'repairIntervalMs' | 'repairBatchSize'>, deps: RepairSweepDeps): RepairSweep {
  const runOnce = async (): Promise<number> => {
    const now = deps.clock.now();
    const count = await deps.db.transaction().execute(async (trx) => {
      const db = fromKysely(trx);
      const overdue = await notificationListOverdue(db, { dueBefore: new Date(now.getTime() - config.repairAfterMs), limit: config.repairBatchSize });
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
