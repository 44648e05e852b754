import type { AttemptOutcome, Channel, DeadReason, NotificationState } from '@notify/outbox';
import { type Emitter, type Listener, type Logger, createEmitter } from '@notify/runtime';
import type { DeadLetterCode, SkipReason } from './message.js';
import type { OutcomeFlush } from './outcome-writer.js';

/**
 * Lifecycle events of the dispatcher, for metrics and for tests to await. A listener that throws
 * is logged and ignored: events can never break the delivery loop.
 */
export interface DispatcherEventMap {
  /**
   * The consumer (of `lane`) joined its group and got partitions: once at start, then once per
   * rebalance (a member joined or left) and per kafkajs consumer restart after a crash.
   */
  assigned: { readonly partitions: number; readonly lane: 'normal' | 'high' };
  /** A due message started its delivery; `latenessMs` is how long after its `due_at` (never negative unless the clock jumped). */
  dispatched: { readonly topic: string; readonly notificationId: string; readonly attempt: number; readonly latenessMs: number };
  /** One attempt finished and was recorded. `durationMs` is the provider call (0 when none was made). */
  attempt: {
    readonly notificationId: string;
    readonly channel: Channel;
    readonly attempt: number;
    readonly outcome: AttemptOutcome;
    readonly durationMs: number;
    readonly providerStatus: string | null;
  };
  /** A notification changed state (queued → queued is a scheduled retry). */
  stateChanged: {
    readonly notificationId: string;
    readonly channel: Channel;
    readonly from: NotificationState;
    readonly to: NotificationState;
    readonly deadReason: DeadReason | null;
    readonly attempts: number;
  };
  /** A retry was scheduled on a delay topic. */
  retryScheduled: { readonly notificationId: string; readonly attempt: number; readonly delayMs: number; readonly topic: string };
  /** A message needed no work: its notification is terminal, its attempt was done, or another delivery recorded it first. */
  skipped: { readonly notificationId: string; readonly attempt: number; readonly reason: SkipReason };
  /** An unusable message went to `<prefix>.dlq`. Label metrics with `code` (stable, few values), not `reason` (it may name ids). */
  deadLettered: {
    readonly code: DeadLetterCode;
    readonly reason: string;
    readonly topic: string;
    readonly partition: number;
    readonly offset: string;
  };
  /** Something failed that the dispatcher retries or survives (database down, commit refused, consumer crash). */
  consumerError: { readonly phase: 'handler' | 'commit' | 'consumer' | 'repair' | 'schedule' | 'dead-letter'; readonly error: unknown };
  /** A strict-order notification waits for `predecessorId` (no attempt spent); a new message carries it at `dueAt`. */
  /**
   * An attempt was put off without being spent: behind a strict-order predecessor
   * (`predecessorId`), or because its endpoint's circuit is open or its rate limit is spent (`reason`).
   */
  deferred: {
    readonly notificationId: string;
    readonly attempt: number;
    readonly predecessorId?: string;
    readonly reason?: 'circuit_open' | 'rate_limited';
    readonly dueAt: Date;
  };
  /** The repair sweep re-published `count` overdue notifications. */
  repaired: { readonly count: number };
  /** The repair sweep left `count` overdue notifications alone: their requests were published and still wait behind consumer lag. */
  repairDeferred: { readonly count: number };
  /**
   * One group commit of delivery outcomes (see `createOutcomeWriter`): `size` outcomes in one
   * transaction, `recorded` of them written, `failed` not written (their deliveries are retried);
   * `isolated` when the group's statement failed and its outcomes were written one by one.
   */
  outcomesFlushed: OutcomeFlush;
}

/** The name of a dispatcher event. */
export type DispatcherEventName = keyof DispatcherEventMap;

/** A listener for one event; it may be async (a rejection is logged, never thrown). */
export type DispatcherListener<E extends DispatcherEventName> = Listener<DispatcherEventMap[E]>;

/** Subscribe to lifecycle events; returns the unsubscribe function. */
export type OnDispatcherEvent = DispatcherEvents['on'];

/** The dispatcher's typed emitter (runtime's `createEmitter`): `emit` never throws. */
export type DispatcherEvents = Emitter<DispatcherEventMap>;

/** Creates the dispatcher's event emitter. `logger` receives listener failures. */
export function createDispatcherEvents(logger: Logger): DispatcherEvents {
  return createEmitter<DispatcherEventMap>('dispatcher', logger);
}
