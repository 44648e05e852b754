import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { SqlExecutor } from '@notify/outbox';
import { type Clock, ConfigError, type Logger, createPeriodicService, errorSummary } from '@notify/runtime';
import { maintenanceLeaseTake } from './sql/maintenance-lease-take.js';
import { notificationPurgeTerminal } from './sql/notification-purge-terminal.js';

/** Settings of the retention service. */
export interface RetentionConfig {
  /** NOTIFY_RETENTION_DAYS: terminal notifications last changed longer ago are deleted. 0: kept forever (the service does nothing). */
  readonly retentionDays: number;
  /** Time between rounds. Default 60 s. */
  readonly intervalMs?: number;
  /** Notifications per DELETE statement (one short transaction each). Default 1,000. */
  readonly batchSize?: number;
  /** Statements per round at most; the next round continues. Default 100 (100,000 notifications). */
  readonly maxStatementsPerRound?: number;
  /** This process in the lease table. Default: host, pid and a random suffix. */
  readonly instanceId?: string;
}

/** What `createRetentionService` needs. */
export interface RetentionServiceDeps {
  readonly db: SqlExecutor;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** The result of one round. */
export interface RetentionRound {
  /** False when another process holds the lease (or retention is off): nothing was done. */
  readonly ran: boolean;
  /** Notifications deleted (with their attempts, actions and refused outbox rows). */
  readonly deleted: number;
}

/** The retention chore. */
export interface RetentionService {
  /** One round now: takes or renews the lease, then deletes in batches. Rejects on a database error. */
  runOnce(): Promise<RetentionRound>;
  /** Runs a round every `intervalMs` (the first after min(intervalMs, 5 s)); a failed round is logged and retried next time. */
  start(): void;
  /** No round starts any more; a round in progress ends after its current statement. True when none is left running within `timeoutMs`. */
  stop(timeoutMs?: number): Promise<boolean>;
}

/** The lease name in `maintenance_leases`. */
const LEASE = 'retention';
const DAY_MS = 86_400_000;

/**
 * Deletes terminal notifications (sent, dead, cancelled) older than `retentionDays` in bounded
 * batches (River's `job_cleaner.go`, like the relay's outbox purge): each DELETE is its own short
 * transaction of at most `batchSize` notifications, found through an index, skipping locked rows,
 * so deliveries and the API never wait on it for long. Every dispatcher process runs one; only the
 * holder of the `retention` lease works, so two processes do not duplicate the work. The lease
 * lasts three intervals, so a crashed holder is replaced within about three minutes by default.
 */
export function createRetentionService(config: RetentionConfig, deps: RetentionServiceDeps): RetentionService {
  const intervalMs = config.intervalMs ?? 60_000;
  const batchSize = config.batchSize ?? 1_000;
  const maxStatements = config.maxStatementsPerRound ?? 100;
  const owner = config.instanceId ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  if (!Number.isInteger(config.retentionDays) || config.retentionDays < 0) {
    throw new ConfigError('retentionDays', `expected a whole number of days ≥ 0, got ${config.retentionDays}`);
  }
  if (!Number.isInteger(batchSize) || batchSize < 1)
    throw new ConfigError('retention.batchSize', `expected a whole number ≥ 1, got ${batchSize}`);
  const log = deps.logger.child({ component: 'retention' });
  let stopped = false;

  const runOnce = async (): Promise<RetentionRound> => {
    if (config.retentionDays === 0) return { ran: false, deleted: 0 };
    const now = deps.clock.now();
    if (!(await maintenanceLeaseTake(deps.db, { name: LEASE, owner, now, ttlMs: 3 * intervalMs }))) return { ran: false, deleted: 0 };
    const before = new Date(now.getTime() - config.retentionDays * DAY_MS);
    let deleted = 0;
    for (let i = 0; i < maxStatements && !stopped; i++) {
      const n = await notificationPurgeTerminal(deps.db, { before, limit: batchSize });
      deleted += n;
      if (n < batchSize) break;
    }
    if (deleted > 0) log.info({ count: deleted, before: before.toISOString() }, 'retention deleted terminal notifications');
    return { ran: true, deleted };
  };

  const periodic = createPeriodicService({
    name: 'retention',
    intervalMs,
    firstRunAfterMs: Math.min(intervalMs, 5_000),
    run: runOnce,
    onError: (error) => log.warn({ err: errorSummary(error) }, 'retention round failed'),
  });

  return {
    runOnce,
    start: () => periodic.start(),
    stop(timeoutMs) {
      stopped = true;
      return periodic.stop(timeoutMs);
    },
  };
}
