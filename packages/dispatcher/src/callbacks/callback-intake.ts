import { createHash } from 'node:crypto';
import { TOPICS, parseStatusEvent, topicName } from '@notify/contract';
import type { SqlExecutor } from '@notify/outbox';
import { type Clock, type Logger, errorSummary } from '@notify/runtime';
import type { Consumer, Kafka } from 'kafkajs';
import { type DeadLetterSink, createKafkaDeadLetterSink, deadLetterFor } from '../middleware/dead-letter.js';
import { fromKafkaMessage } from '../message.js';
import type { CallbackOutcomeObserver } from './callback-sender.js';
import { type CallbackEventRow, callbackDeliveryEnqueue } from './sql/callback-delivery-enqueue.js';

/** Settings of the callback intake. */
export interface CallbackIntakeConfig {
  readonly topicPrefix: string;
  /** Its own consumer group on `<prefix>.events`, apart from the dispatcher's. */
  readonly groupId: string;
  /** Pending deliveries per tenant at most; further events are dropped and counted. Default 10,000. */
  readonly maxBacklogPerTenant?: number;
  /** Kafka session timeout of the group. Default 30 s. */
  readonly sessionTimeoutMs?: number;
}

/** What the intake needs. */
export interface CallbackIntakeDeps {
  readonly db: SqlExecutor;
  readonly kafka: Kafka;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Where malformed events go. Default: `<prefix>.dlq` through its own producer. */
  readonly deadLetters?: DeadLetterSink;
  /** Told how many events a full backlog dropped (metrics). */
  readonly observe?: CallbackOutcomeObserver;
}

/** The callback intake: a Kafka consumer. */
export interface CallbackIntake {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** The webhook-id of an event: the same bytes (a re-read, a duplicate publish) give the same id. */
function eventIdOf(value: Buffer): string {
  return `evt_${createHash('sha256').update(value).digest('hex').slice(0, 32)}`;
}

/**
 * Reads `<prefix>.events` in a consumer group of its own and turns each status event a tenant's
 * callback asked for into a pending row of `callback_deliveries`, one INSERT per Kafka batch, and
 * commits the batch's offsets after it: at-least-once, and a re-read batch is not queued twice
 * (unique event id). The dispatcher's consumers never wait for it, and it never waits for a
 * callback receiver (the sender does, from PostgreSQL). A malformed event goes to the DLQ.
 */
export function createCallbackIntake(config: CallbackIntakeConfig, deps: CallbackIntakeDeps): CallbackIntake {
  const topic = topicName(config.topicPrefix, TOPICS.events);
  const maxBacklog = config.maxBacklogPerTenant ?? 10_000;
  const log = deps.logger.child({ service: 'callbacks' });
  const ownSink = deps.deadLetters ? undefined : createKafkaDeadLetterSink(deps.kafka, config.topicPrefix);
  const sink: DeadLetterSink = deps.deadLetters ?? ownSink!;
  let consumer: Consumer | undefined;

  return {
    async start() {
      await ownSink?.connect();
      const c = deps.kafka.consumer({
        groupId: config.groupId,
        allowAutoTopicCreation: false,
        sessionTimeout: config.sessionTimeoutMs ?? 30_000,
        maxWaitTimeInMs: 250,
      });
      consumer = c;
      await c.connect();
      // From the beginning for a new group: an event published before the first start is not lost
      // (only tenants with a registered callback get anything).
      await c.subscribe({ topic, fromBeginning: true });
      await c.run({
        eachBatchAutoResolve: false,
        eachBatch: async (payload) => {
          const { batch } = payload;
          const rows: CallbackEventRow[] = [];
          for (const message of batch.messages) {
            const parsed = parseStatusEvent(message.value);
            if (!parsed.ok || message.value === null) {
              const reason = parsed.ok ? 'empty value' : parsed.reason;
              await sink.send(deadLetterFor(fromKafkaMessage(batch.topic, batch.partition, message), `callbacks: ${reason}`));
              log.warn({ topic: batch.topic, partition: batch.partition, offset: message.offset }, 'malformed status event dead-lettered');
              continue;
            }
            const e = parsed.message;
            rows.push({
              tenantId: e.tenant_id,
              eventId: eventIdOf(message.value),
              notificationId: e.id,
              type: e.type,
              payload: message.value.toString('utf8'),
            });
          }
          const result = await callbackDeliveryEnqueue(deps.db, { events: rows, now: deps.clock.now(), maxBacklog });
          if (result.dropped > 0) {
            log.warn({ dropped: result.dropped }, 'callback backlog full: events dropped');
            deps.observe?.('dropped', result.dropped);
          }
          const last = batch.messages[batch.messages.length - 1];
          if (last) payload.resolveOffset(last.offset);
          await payload.commitOffsetsIfNecessary();
          await payload.heartbeat();
        },
      });
    },
    async stop() {
      try {
        await consumer?.disconnect();
      } catch (err) {
        log.warn({ err: errorSummary(err) }, 'callback consumer disconnect failed');
      }
      await ownSink?.disconnect();
    },
  };
}
