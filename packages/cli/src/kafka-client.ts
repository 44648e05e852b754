import { type Admin, Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import type { Logger } from '@notify/runtime';

/**
 * Conditions kafkajs logs at error level although they are normal moments of a healthy cluster,
 * which it retries by itself: a fresh broker loading its group coordinator, a coordinator or
 * partition leader moving, a rebalance. A newcomer's first `notify start` printed the first two
 * as errors every time. The texts are kafkajs 2.2.4's (src/protocol/error.js, consumer/runner.js);
 * a unit test checks them against the installed kafkajs.
 */
/** @internal Exported for its tests. */
export const RETRIED_KAFKA_CONDITIONS: ReadonlySet<string> = new Set([
  "The coordinator is loading and hence can't process requests for this group", // GROUP_LOAD_IN_PROGRESS (14)
  'The group coordinator is not available', // GROUP_COORDINATOR_NOT_AVAILABLE (15)
  'This is not the correct coordinator for this group', // NOT_COORDINATOR_FOR_GROUP (16)
  'There is no leader for this topic-partition as we are in the middle of a leadership election', // LEADER_NOT_AVAILABLE (5)
  'This server is not the leader for that topic-partition', // NOT_LEADER_FOR_PARTITION (6)
  'The group is rebalancing, so a rejoin is needed', // REBALANCE_IN_PROGRESS (27)
  'The coordinator is not aware of this member, re-joining the group', // the consumer's own rejoin after a restart
]);

/**
 * Warnings kafkajs gives about a setting notify chose on purpose: the relay's idempotent producer
 * retries a bounded number of times (packages/relay/src/kafka-publisher.ts) so that an outage
 * reaches the relay's own retry and metrics. Logged at every start and every producer reconnect
 * (8 times in one Kafka outage), they said nothing an operator could act on: debug.
 */
/** @internal Exported for its tests. */
export const CHOSEN_KAFKA_WARNINGS: ReadonlySet<string> = new Set([
  'Limiting retries for the idempotent producer may invalidate EoS guarantees',
]);

/**
 * kafkajs log entries → our logger (warn and error only: kafkajs is chatty at info). Entries about
 * a condition in `RETRIED_KAFKA_CONDITIONS` go to debug. Only the namespace, message and broker
 * metadata are kept; kafkajs never logs message values. `CHOSEN_KAFKA_WARNINGS` go to debug too.
 * With `quiet`, every entry goes to debug: for a client whose user reports its failures itself.
 */
/** @internal Exported for its tests. */
export function kafkaLogCreator(logger: Logger, { quiet = false }: { readonly quiet?: boolean } = {}) {
  return () =>
    ({ namespace, level, log }: { namespace: string; level: logLevel; log: { message: string; [k: string]: unknown } }) => {
      const { message, timestamp: _t, logger: _l, stack: _s, ...rest } = log;
      const fields = { component: 'kafkajs', kafka_namespace: namespace, ...rest };
      if (
        quiet ||
        CHOSEN_KAFKA_WARNINGS.has(message) ||
        RETRIED_KAFKA_CONDITIONS.has(message) ||
        (typeof rest.error === 'string' && RETRIED_KAFKA_CONDITIONS.has(rest.error))
      ) {
        logger.debug(fields, message);
      } else if (level === logLevel.ERROR) logger.error(fields, message);
      else if (level === logLevel.WARN) logger.warn(fields, message);
    };
}

/** Options of `createKafka`. */
export interface CreateKafkaOptions {
  readonly brokers: readonly string[];
  readonly clientId: string;
  readonly logger: Logger;
  /** kafkajs connection and request retries; default: kafkajs's own (several attempts over ~30 s). */
  readonly retry?: KafkaConfig['retry'];
  readonly connectionTimeoutMs?: number;
  /**
   * Every kafkajs log entry at debug (default false). For the lazily connected admin client of a
   * process without the relay and the dispatcher: while Kafka is down, kafkajs logged two
   * connection errors per retry on every scrape, and the lag probe reports the outage itself.
   */
  readonly quiet?: boolean;
}

/** A kafkajs client that logs through our logger. */
export function createKafka(options: CreateKafkaOptions): Kafka {
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: logLevel.WARN,
    logCreator: kafkaLogCreator(options.logger, { quiet: options.quiet ?? false }),
    connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    ...(options.retry ? { retry: options.retry } : {}),
  });
}

/** An admin client connected on first use (`lazyKafkaAdmin`). */
export interface LazyKafkaAdmin {
  /** The connected client; connects first when it is not (again after a failed connect). */
  get(): Promise<Admin>;
  /** Disconnects it when it connected. */
  disconnect(): Promise<void>;
}

/**
 * An admin client that connects when first asked for, not at start: a process without the relay
 * and the dispatcher needs Kafka only for its consumer-lag gauge and the console's pipeline page,
 * so it starts, and stays ready, while Kafka is down. A failed connect is tried again at the next
 * `get`.
 */
export function lazyKafkaAdmin(kafka: Kafka): LazyKafkaAdmin {
  let connected: Promise<Admin> | undefined;
  return {
    get() {
      connected ??= (async () => {
        const admin = kafka.admin();
        try {
          await admin.connect();
          return admin;
        } catch (err) {
          connected = undefined;
          await admin.disconnect().catch(() => {});
          throw err;
        }
      })();
      return connected;
    },
    async disconnect() {
      const admin = await connected?.catch(() => undefined);
      connected = undefined;
      await admin?.disconnect();
    },
  };
}
