import { HEADERS, TOPICS, topicName } from '@notify/contract';
import { type Logger } from '@notify/runtime';
import { Partitioners, type Kafka, type Producer } from 'kafkajs';
import type { DispatcherEvents } from '../events.js';
import type { InboundMessage, Middleware } from '../message.js';

/** A message bound for the dead-letter topic: the original key and bytes, with `dlq-*` headers added. */
export interface DeadLetter {
  readonly key: Buffer | null;
  readonly value: Buffer | null;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Where dead letters go. `send` resolves once the message is durably stored (for Kafka: acked by
 * all in-sync replicas); until then the source message is not acknowledged.
 */
export interface DeadLetterSink {
  send(letter: DeadLetter): Promise<void>;
}

/** Longest `dlq-reason` header: a reason may quote the message (an id), which may itself be huge. */
/** @internal Exported for its tests. */
export const MAX_DLQ_REASON_CHARS = 500;

/** The dead letter for `message`: its own headers plus the reason (cut to MAX_DLQ_REASON_CHARS) and where it came from. */
export function deadLetterFor(message: InboundMessage, reason: string): DeadLetter {
  return {
    key: message.key,
    value: message.value,
    headers: {
      ...message.headers,
      [HEADERS.dlqReason]: reason.length > MAX_DLQ_REASON_CHARS ? `${reason.slice(0, MAX_DLQ_REASON_CHARS - 1)}…` : reason,
      [HEADERS.dlqSourceTopic]: message.topic,
      [HEADERS.dlqSourcePartition]: String(message.partition),
      [HEADERS.dlqSourceOffset]: message.offset,
    },
  };
}

/**
 * Middleware: a `dead-letter` result is published to the sink with its reason (Watermill's
 * poison middleware) and becomes `dead-lettered`, so the message is acknowledged and the
 * consumer moves on. A failing sink throws: the message is retried, never dropped.
 */
export function deadLetter(sink: DeadLetterSink, deps: { events: DispatcherEvents; logger: Logger }): Middleware {
  return (next) => async (message, signal, hooks) => {
    const result = await next(message, signal, hooks);
    if (result.kind !== 'dead-letter') return result;
    await sink.send(deadLetterFor(message, result.reason));
    deps.logger.warn(
      { topic: message.topic, partition: message.partition, offset: message.offset, code: result.code },
      'message dead-lettered',
    );
    deps.events.emit('deadLettered', {
      code: result.code,
      reason: result.reason,
      topic: message.topic,
      partition: message.partition,
      offset: message.offset,
    });
    return { kind: 'dead-lettered', code: result.code, reason: result.reason };
  };
}

/**
 * The Kafka dead-letter sink: produces to `<prefix>.dlq` directly, not through the outbox. The
 * original bytes need not be valid UTF-8 (the outbox stores text), and no database state has to
 * commit with a dead letter. Idempotent producer, acks from all replicas.
 */
export function createKafkaDeadLetterSink(
  kafka: Kafka,
  topicPrefix: string,
): DeadLetterSink & { connect(): Promise<void>; disconnect(): Promise<void> } {
  const topic = topicName(topicPrefix, TOPICS.dlq);
  const producer: Producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    allowAutoTopicCreation: false,
    createPartitioner: Partitioners.DefaultPartitioner,
  });
  return {
    connect: () => producer.connect(),
    disconnect: () => producer.disconnect(),
    async send(letter) {
      await producer.send({ topic, acks: -1, messages: [{ key: letter.key, value: letter.value, headers: { ...letter.headers } }] });
    },
  };
}
