import type { SqlExecutor } from '@notify/outbox';
import { type Clock, type Logger, createPeriodicService, errorSummary } from '@notify/runtime';
import type { ResolvedRelayConfig } from './config.js';
import type { RelayEvents } from './events.js';
import { outboxPurgePublished } from './sql/outbox-purge-published.js';

/** What `createPurgeService` needs. */
export interface PurgeServiceDeps {
  readonly db: SqlExecutor;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: RelayEvents;
  /** The slots this instance holds now (the lease service's `slots`): it purges only while it holds slot 0. */
  readonly heldSlots: () => readonly number[];
}

/** The retention purge of published outbox rows. */
export interface PurgeService {
  /**
   * One round: deletes rows published more than `retentionMs` ago, `purgeBatchSize` per
   * statement, at most `PURGE_MAX_STATEMENTS` statements; emits `purged` and returns the count.
   * Returns null, doing nothing, when this instance does not hold slot 0. Rejects on a database error.
   */
  runOnce(): Promise<number | null>;
  /** Runs a round every `purgeIntervalMs`, the first one after min(purgeIntervalMs, 1 s); a failed round is reported as `error` (stage `purge`). Does nothing after `stop`. */
  start(): void;
  /** No round starts any more, and a round in progress ends after its current statement; waits up to `timeoutMs` for it. True when none is left running. */
  stop(timeoutMs?: number): Promise<boolean>;
}

/** Statements per purge round: bounded work per round; the next round continues. */
/** @internal Exported for its tests. */
export const PURGE_MAX_STATEMENTS = 100;

/**
 * Published rows are kept `retentionMs`, then deleted in bounded batches (River's
 * `job_cleaner.go`), on runtime's `createPeriodicService`. Every relay instance runs one; only
 * the holder of slot 0 purges.
 */
export function createPurgeService(
  config: Pick<ResolvedRelayConfig, 'retentionMs' | 'purgeIntervalMs' | 'purgeBatchSize'>,
  deps: PurgeServiceDeps,
): PurgeService {
  const { logger, events } = deps;
  let stopped = false;

  const runOnce = async (): Promise<number | null> => {
    // One purger is enough: the holder of slot 0 (there is always exactly one while relays run).
    if (!deps.heldSlots().includes(0)) return null;
    const before = new Date(deps.clock.now().getTime() - config.retentionMs);
    let total = 0;
    for (let i = 0; i < PURGE_MAX_STATEMENTS && !stopped; i++) {
      const n = await outboxPurgePublished(deps.db, { before, limit: config.purgeBatchSize });
      total += n;
      if (n < config.purgeBatchSize) break; // both kinds of row done for now (outboxPurgePublished)
    }
    if (total > 0) logger.info({ count: total }, 'relay purged published outbox rows');
    events.emit('purged', { count: total });
    return total;
  };

  const periodic = createPeriodicService({
    name: 'relay purge',
    intervalMs: config.purgeIntervalMs,
    firstRunAfterMs: Math.min(config.purgeIntervalMs, 1_000),
    run: runOnce,
    onError: (error) => {
      logger.warn({ err: errorSummary(error) }, 'relay purge failed');
      events.emit('error', { error, stage: 'purge' });
    },
  });

  return {
    runOnce,
    start: () => periodic.start(),
    stop(timeoutMs) {
      stopped = true; // a round in progress stops early (see runOnce)
      return periodic.stop(timeoutMs);
    },
  };
}
