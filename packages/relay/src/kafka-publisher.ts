import { type ICustomPartitioner, type Kafka, type Producer, type RecordMetadata, type RetryOptions } from 'kafkajs';
import { type Logger, errorSummary, settlesWithin, silentLogger } from '@notify/runtime';
import { keyedPartitioner } from './partitioner.js';
import { PublishError, type PublishMessage, type Publisher } from './publisher.js';

/** Options of `createKafkaPublisher`. */
export interface KafkaPublisherOptions {
  /**
   * kafkajs retries inside one `publish` (connection, metadata, retriable broker errors). The
   * idempotent producer defaults to retrying forever, which would hide an outage from the relay's
   * own backoff and metrics; we bound it. Default `{ retries: 5, initialRetryTime: 100, maxRetryTime: 2000 }`.
   */
  readonly retry?: RetryOptions;
  /** How long the broker may wait for in-sync replicas before answering. Default 30 000 ms. */
  readonly ackTimeoutMs?: number;
  readonly logger?: Logger;
}

const DEFAULT_RETRY: RetryOptions = { retries: 5, initialRetryTime: 100, maxRetryTime: 2_000 };
const DISCONNECT_TIMEOUT_MS = 5_000;

/**
 * A `Publisher` over a kafkajs idempotent producer: `idempotent: true`, acks from all in-sync
 * replicas (-1), one request in flight per broker, the Java-compatible murmur2 partitioner
 * (kafkajs' DefaultPartitioner, hashed without Long objects: `keyedPartitioner`), no automatic
 * topic creation. One `sendBatch` per `publish`.
 *
 * After any failure the producer is dropped and a new one (a new producer id) is made for the
 * next call: kafkajs rolls its sequence numbers back when a request fails, so if the broker did
 * append that request, a retry with different contents under the same producer would be rejected
 * as out of sequence forever (or, with the same first sequence and length, silently dropped as a
 * duplicate). A fresh producer id makes every retry an ordinary, at-least-once republish.
 *
 * A `sendBatch` that resolves is checked: every partition a message went to must be in the
 * broker's acknowledgements, or the publish fails (and is retried whole, at least once). kafkajs
 * 2.2.4 splits a batch into one request per leader and, retrying after NOT_LEADER_FOR_PARTITION,
 * skips every broker that already answered, so when the failed partitions' new leader is one of
 * those, their messages are never sent and `sendBatch` still resolves (kafkajs#1798). A rolling
 * restart of a 3-broker cluster lost 7 notifications that way (RELIABILITY.md, found and fixed).
 */
export function createKafkaPublisher(kafka: Kafka, options: KafkaPublisherOptions = {}): Publisher {
  const logger = options.logger ?? silentLogger;
  const retry = options.retry ?? DEFAULT_RETRY;
  let producer: Producer | null = null;
  let connected: Promise<Producer> | null = null;
  let chain: Promise<unknown> = Promise.resolve();
  let closed = false;

  // Sends are serialized by `chain`, so one tracker serves every send of this publisher.
  const acks = createAckCheck(keyedPartitioner);

  const connect = (): Promise<Producer> => {
    if (connected) return connected;
    const p = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: acks.createPartitioner,
      allowAutoTopicCreation: false,
      retry,
    });
    producer = p;
    connected = p.connect().then(() => p);
    return connected;
  };

  const drop = async (): Promise<void> => {
    const p = producer;
    producer = null;
    connected = null;
    if (!p) return;
    await settlesWithin(p.disconnect(), DISCONNECT_TIMEOUT_MS);
  };

  const send = async (messages: readonly PublishMessage[]): Promise<void> => {
    if (closed) throw new PublishError('publisher_closed', 'the publisher is closed', { retriable: false });
    if (messages.length === 0) return;
    // Group by topic, keeping array order inside each topic (kafkajs keeps it per partition). The
    // messages go as they are: kafkajs reads key, value and headers and ignores their topic.
    const byTopic = new Map<string, PublishMessage[]>();
    for (const m of messages) {
      let list = byTopic.get(m.topic);
      if (!list) byTopic.set(m.topic, (list = []));
      list.push(m);
    }
    try {
      const p = await connect();
      acks.begin();
      acks.verify(
        await p.sendBatch({
          acks: -1,
          timeout: options.ackTimeoutMs ?? 30_000,
          topicMessages: [...byTopic].map(([topic, msgs]) => ({ topic, messages: msgs })),
        }),
      );
    } catch (err) {
      await drop();
      const e = err as { name?: string; message?: string; retriable?: boolean };
      logger.warn({ err: errorSummary(err), count: messages.length }, 'kafka publish failed');
      throw new PublishError(
        'publish_failed',
        `kafka publish of ${messages.length} messages failed: ${e.name ?? 'Error'}: ${e.message ?? String(err)}`,
        {
          cause: err,
          retriable: e.retriable ?? true,
        },
      );
    }
  };

  return {
    publish(messages) {
      const run = chain.then(() => send(messages));
      chain = run.catch(() => {});
      return run;
    },
    async close() {
      closed = true;
      await chain;
      await drop();
    },
  };
}

/** A `sendBatch` that resolved without an acknowledgement for some partitions it wrote to. */
export class PartialAckError extends Error {
  override readonly name = 'PartialAckError';
  readonly retriable = true;
  constructor(readonly partitions: readonly string[]) {
    super(`the broker acknowledged no write to ${partitions.join(', ')}`);
  }
}

/** `createAckCheck`'s answer: the partitioner to give the producer, and the check around each `sendBatch`. */
export interface AckCheck {
  readonly createPartitioner: ICustomPartitioner;
  /** Before a `sendBatch`: forget the previous one's partitions. One send at a time per check. */
  begin(): void;
  /** After it resolved: throws `PartialAckError` when a partition it wrote to is not acknowledged. */
  verify(acks: readonly RecordMetadata[]): void;
}

/**
 * Guards a kafkajs 2.2.4 producer against a `sendBatch` that resolves although some messages were
 * never sent: kafkajs splits a batch into one request per leader and, retrying after
 * NOT_LEADER_FOR_PARTITION, skips every broker that already answered, so when the failed
 * partitions' new leader is one of those their messages are dropped (kafkajs#1798). Wraps `base`
 * to record where each message went (kafkajs asks again on each retry, with the same answers).
 */
export function createAckCheck(base: ICustomPartitioner): AckCheck {
  // topic → a flag per partition a message went to (an array with holes: no string per message)
  let routed = new Map<string, number[]>();
  return {
    createPartitioner: () => {
      const partition = base();
      return (args) => {
        const chosen = partition(args);
        let flags = routed.get(args.topic);
        if (!flags) routed.set(args.topic, (flags = []));
        flags[chosen] = 1;
        return chosen;
      };
    },
    begin() {
      routed = new Map();
    },
    verify(acks) {
      const acked = new Set(acks.map((a) => `${a.topicName}[${a.partition}]`));
      const missing: string[] = [];
      for (const [topic, flags] of routed) {
        flags.forEach((_, partition) => {
          const written = `${topic}[${partition}]`;
          if (!acked.has(written)) missing.push(written);
        });
      }
      if (missing.length > 0) throw new PartialAckError(missing);
    },
  };
}
