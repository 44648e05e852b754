import { type Emitter, type Listener, type Logger, createEmitter } from '@notify/runtime';

/** Where a batch failed: claiming it (database), publishing it (Kafka), or marking it published and committing (database). */
export type BatchStage = 'claim' | 'publish' | 'mark';

/** Background work other than batches whose failures are reported (and retried) without stopping the relay. */
export type BackgroundStage = 'lease' | 'wakeup' | 'purge' | 'stop';

/**
 * The relay's lifecycle events and their payloads. Listeners run synchronously in the relay's
 * loop: keep them cheap. A listener that throws (or returns a rejected promise) is logged and
 * ignored; it never stops the relay. Metrics come from here (see docs/relay.md).
 */
export interface RelayEventMap {
  /**
   * One claim (a batch read) finished: `count` rows (0 when idle), over `slots` locked slots.
   * `heldBack`: unpublished rows of those slots exist but wait for an older open transaction.
   * A read made ahead (pipelining) and abandoned after a failure is counted too.
   */
  claimed: { readonly count: number; readonly slots: number; readonly heldBack: boolean };
  /** A batch was published to Kafka and committed as published. `durationMs` covers claim, publish, mark and commit; `publishMs` the Kafka part. */
  published: {
    readonly count: number;
    readonly durationMs: number;
    readonly publishMs: number;
    readonly firstId: string;
    readonly lastId: string;
  };
  /**
   * Kafka refused an outbox row for good (too large, invalid record): it was set aside in
   * `outbox_refused` and marked published, so its key slot moves on. `deadChannel` is set when
   * its notification ended dead with reason `publish_failed` as a result.
   */
  refused: {
    readonly outboxId: string;
    readonly topic: string;
    readonly reason: string;
    readonly notificationId: string | undefined;
    readonly deadChannel: string | undefined;
  };
  /** A batch failed; its rows stay unpublished and the relay retries after `retryInMs`. `attempt` counts consecutive failures. */
  publishError: { readonly error: unknown; readonly stage: BatchStage; readonly attempt: number; readonly retryInMs: number };
  /** The set of slots this instance holds changed. */
  leaseChanged: { readonly slots: readonly number[]; readonly acquired: readonly number[]; readonly released: readonly number[] };
  /** One purge run finished (`count` may be 0). */
  purged: { readonly count: number };
  /** The LISTEN connection is up (`reconnect`: it had been lost). */
  wakeupConnected: { readonly reconnect: boolean };
  /** Background work failed; it is retried on its next tick. */
  error: { readonly error: unknown; readonly stage: BackgroundStage };
  /** `stop()` finished; `drained` is false when the in-flight batch did not finish before the deadline. */
  stopped: { readonly drained: boolean };
}

/** The name of a relay event. */
export type RelayEventName = keyof RelayEventMap;

/** A listener for one event; it may be async (a rejection is logged, never thrown). */
export type RelayListener<E extends RelayEventName> = Listener<RelayEventMap[E]>;

/** The relay's typed emitter (runtime's `createEmitter`): `emit` never throws. */
export type RelayEvents = Emitter<RelayEventMap>;

/** Creates the emitter. `logger` receives listener failures. */
export function createRelayEvents(logger: Logger): RelayEvents {
  return createEmitter<RelayEventMap>('relay', logger);
}
