import type { SqlExecutor } from '@notify/outbox';
import { type Clock, type Logger, createPeriodicService, errorSummary } from '@notify/runtime';
import type { ResolvedRelayConfig } from './config.js';
import type { RelayEvents } from './events.js';
import { planLeases } from './lease-plan.js';
import { relayInstanceHeartbeat } from './sql/relay-instance-heartbeat.js';
import { relayInstanceRemove } from './sql/relay-instance-remove.js';
import { relayLeaseAcquire } from './sql/relay-lease-acquire.js';
import { relayLeaseRelease } from './sql/relay-lease-release.js';
import { relayLeaseRenew } from './sql/relay-lease-renew.js';

/** What `createLeaseService` needs. */
export interface LeaseServiceDeps {
  readonly db: SqlExecutor;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly events: RelayEvents;
  /** Rows of `relay_leases`, read by the relay at start. */
  readonly slotCount: () => number;
  /** A round took new slots: the publish loop should look at them now. */
  readonly onAcquired: () => void;
}

/** What one lease round did. */
export interface LeaseRound {
  /** The live instances, this one included, sorted. */
  readonly live: readonly string[];
  /** The slots held after the round, sorted. */
  readonly slots: readonly number[];
  readonly acquired: readonly number[];
  readonly released: readonly number[];
}

/** The leases of one relay instance on the hash slots. */
export interface LeaseService {
  /** The slots this instance holds now, sorted (as of the last round). */
  readonly slots: () => readonly number[];
  /**
   * One round: heartbeat (and the live set), renew every lease it owns, then rebalance to its
   * fair share (`planLeases`): release its highest slots or take free and expired ones. Emits
   * `leaseChanged` when the held set changed. After `stop` it only heartbeats and renews.
   * Rejects on a database error.
   */
  runOnce(): Promise<LeaseRound>;
  /** Runs a round every `heartbeatIntervalMs` (the first one after an interval); a failed round is reported as `error` (stage `lease`). Does nothing after `stop`. */
  start(): void;
  /** No round starts any more; waits up to `timeoutMs` for one in progress. True when none is left running. */
  stop(timeoutMs?: number): Promise<boolean>;
  /** Gives up every lease and leaves the live set, so the others take the slots at once. A failure is reported as `error` (stage `stop`); it holds no slot afterwards either way. */
  releaseAll(): Promise<void>;
}

/**
 * Leases on hash slots (docs/relay.md, "Leases on hash slots"): a relay publishes a slot only
 * while it owns an unexpired lease on it, and takes a slot only with the slot's exclusive
 * advisory lock (the fence against a batch still in flight). This service keeps them: River's
 * maintenance-service shape, a periodic `runOnce` on runtime's `createPeriodicService`.
 */
export function createLeaseService(
  config: Pick<ResolvedRelayConfig, 'instanceId' | 'leaseTtlMs' | 'heartbeatIntervalMs'>,
  deps: LeaseServiceDeps,
): LeaseService {
  const { instanceId } = config;
  const { db, logger, events } = deps;
  let held: number[] = [];
  let stopped = false;

  const runOnce = async (): Promise<LeaseRound> => {
    const now = deps.clock.now();
    const expiresAt = new Date(now.getTime() + config.leaseTtlMs);
    const live = await relayInstanceHeartbeat(db, { instanceId, now, expiresAt });
    const mine = await relayLeaseRenew(db, { instanceId, expiresAt });
    // Stopping: every lease is released next; taking or giving up slots now would be wasted.
    if (stopped) return { live, slots: held, acquired: [], released: [] };
    const plan = planLeases({ instanceId, liveInstances: live, slotCount: deps.slotCount(), held: mine });
    const released = plan.release.length > 0 ? await relayLeaseRelease(db, { instanceId, slots: plan.release }) : [];
    const acquired = plan.acquire > 0 ? await relayLeaseAcquire(db, { instanceId, now, expiresAt, count: plan.acquire }) : [];
    const next = [...mine.filter((s) => !released.includes(s)), ...acquired].sort((a, b) => a - b);
    const changed = next.length !== held.length || next.some((s, i) => s !== held[i]);
    held = next;
    if (changed) {
      logger.info({ slots: next.length, acquired: acquired.length, released: released.length, live: live.length }, 'relay leases changed');
      events.emit('leaseChanged', { slots: next, acquired, released });
      if (acquired.length > 0) deps.onAcquired();
    }
    return { live, slots: next, acquired, released };
  };

  const periodic = createPeriodicService({
    name: 'relay leases',
    intervalMs: config.heartbeatIntervalMs,
    run: runOnce,
    // Every heartbeat counts: a backed-off one would let the leases lapse after a failure or two.
    backOffOnFailure: false,
    onError: (error) => {
      logger.warn({ err: errorSummary(error) }, 'relay lease heartbeat failed');
      events.emit('error', { error, stage: 'lease' });
    },
  });

  return {
    slots: () => held,
    runOnce,
    start: () => periodic.start(),
    stop(timeoutMs) {
      stopped = true; // a round in progress stops early (see runOnce)
      return periodic.stop(timeoutMs);
    },
    async releaseAll() {
      try {
        // Safe even if a batch is still in flight: its shared slot locks fence the next owner.
        await relayLeaseRelease(db, { instanceId });
        await relayInstanceRemove(db, { instanceId });
      } catch (error) {
        events.emit('error', { error, stage: 'stop' });
      }
      held = [];
    },
  };
}
