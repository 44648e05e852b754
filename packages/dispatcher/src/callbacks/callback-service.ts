import type { SqlExecutor } from '@notify/outbox';
import type { Clock, Logger } from '@notify/runtime';
import type { Kafka } from 'kafkajs';
import { type CallbackIntakeConfig, createCallbackIntake } from './callback-intake.js';
import { type CallbackOutcomeObserver, type CallbackSender, type CallbackSenderConfig, createCallbackSender } from './callback-sender.js';
import type { DeadLetterSink } from '../middleware/dead-letter.js';

/** Settings of the status callbacks: the intake's and the sender's. */
export type CallbackServiceConfig = CallbackIntakeConfig & CallbackSenderConfig;

/** What the status callbacks need. */
export interface CallbackServiceDeps {
  readonly db: SqlExecutor;
  readonly kafka: Kafka;
  readonly clock: Clock;
  readonly logger: Logger;
  /** The tenant's own signing secrets (`createTenantSecretSource`). */
  readonly tenantSecret?: (tenantId: string) => Promise<readonly string[] | null>;
  readonly deadLetters?: DeadLetterSink;
  readonly random?: () => number;
  /** Told what became of the callbacks: delivered, retried, failed, dropped (metrics). */
  readonly observe?: CallbackOutcomeObserver;
}

/** Status callbacks, started and stopped as one. */
export interface CallbackService {
  /** Joins the consumer group and starts sending. */
  start(): Promise<void>;
  /** Leaves the group, stops sending (waits up to `timeoutMs` for POSTs in flight), closes connections. */
  stop(timeoutMs?: number): Promise<void>;
  /** True while no tenant has a callback endpoint and the intake reads no events. */
  intakePaused(): boolean;
  /** The sender, for tests that drive a round. */
  readonly sender: CallbackSender;
}

/**
 * Status callbacks (docs/callbacks.md): the intake (a consumer group of its own on
 * `<prefix>.events` → `callback_deliveries`) and the sender (PostgreSQL → the tenant's URL).
 */
export function createCallbackService(config: CallbackServiceConfig, deps: CallbackServiceDeps): CallbackService {
  const intake = createCallbackIntake(config, deps);
  const sender = createCallbackSender(config, deps);
  return {
    sender,
    intakePaused: () => intake.paused(),
    async start() {
      await intake.start();
      sender.start();
    },
    async stop(timeoutMs) {
      await intake.stop();
      await sender.stop(timeoutMs);
      sender.close();
    },
  };
}
