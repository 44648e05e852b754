import { Kafka, type KafkaConfig, logLevel } from 'kafkajs';
import type { Logger } from '@notify/outbox';

/**
 * kafkajs log entries → our logger (warn and error only: kafkajs is chatty at info). Only the
 * namespace, message and broker metadata are kept; kafkajs never logs message values.
 */
function logCreator(logger: Logger) {
  return () =>
    ({ namespace, level, log }: { namespace: string; level: logLevel; log: { message: string; [k: string]: unknown } }) => {
      const { message, timestamp: _t, logger: _l, stack: _s, ...rest } = log;
      const fields = { component: 'kafkajs', kafka_namespace: namespace, ...rest };
      if (level === logLevel.ERROR) logger.error(fields, message);
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
}

/** A kafkajs client that logs through our logger. */
export function createKafka(options: CreateKafkaOptions): Kafka {
  return new Kafka({
    clientId: options.clientId,
    brokers: [...options.brokers],
    logLevel: logLevel.WARN,
    logCreator: logCreator(options.logger),
    connectionTimeout: options.connectionTimeoutMs ?? 3_000,
    ...(options.retry ? { retry: options.retry } : {}),
  });
}
