// The public surface of @notify/relay. Everything exported is documented where it is defined.
export { createRelay, type Relay, type RelayDeps, type RelayHooks } from './relay.js';
export { createPublishLoop, type PublishLoop, type PublishLoopConfig, type PublishLoopDeps, type PublishRound } from './publish-loop.js';
export { createBatchSource, type BatchSource, type BatchSourceDeps, type ClaimedBatch } from './batch-source.js';
export { createLeaseService, type LeaseService, type LeaseServiceDeps, type LeaseRound } from './lease-service.js';
export { createPurgeService, type PurgeService, type PurgeServiceDeps } from './purge-service.js';
export { type RelayConfig, type ResolvedRelayConfig, RELAY_DEFAULTS, resolveRelayConfig } from './config.js';
export {
  type RelayEventMap,
  type RelayEventName,
  type RelayListener,
  type RelayEvents,
  type BatchStage,
  type BackgroundStage,
  createRelayEvents,
} from './events.js';
export { type Publisher, type PublishMessage, PublishError, PUBLISH_ERROR_CODES, type PublishErrorCode } from './publisher.js';
export { type AckCheck, PartialAckError, createAckCheck, createKafkaPublisher, type KafkaPublisherOptions } from './kafka-publisher.js';
export { planLeases, type LeasePlan, type LeasePlanInput } from './lease-plan.js';
export { createWakeup, type Wakeup, type WakeupOptions, OUTBOX_CHANNEL } from './wakeup.js';
export { outboxLag, type OutboxLag, type OutboxLagParams } from './sql/outbox-lag.js';
export { outboxClaimBatch, type OutboxClaimBatchParams, type OutboxClaimBatchResult, type ClaimedRow } from './sql/outbox-claim-batch.js';
export { outboxMarkPublished, type OutboxMarkPublishedParams } from './sql/outbox-mark-published.js';
export { outboxPurgePublished, type OutboxPurgePublishedParams } from './sql/outbox-purge-published.js';
