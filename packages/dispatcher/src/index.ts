export type { ContentPreparer, Prepared } from './content/content.js';
export { createContentPreparer, type ContentPreparerDeps } from './content/preparer.js';
// The template language, recipient normalization and the management writes live in @notify/runtime
// (the API manages templates and opt-outs too); re-exported here for the dispatcher's callers.
export {
  parseTemplate,
  templateVariables,
  renderTemplate,
  escapeHtml,
  TemplateSyntaxError,
  type TemplatePart,
  type RenderMode,
  type RenderResult,
  normalizeRecipient,
  templateInsert,
  TemplateRejectedError,
  TemplateChannelConflictError,
  type TemplateInsertParams,
  suppressionInsert,
  type SuppressionInsertParams,
  suppressionDelete,
  type SuppressionDeleteParams,
} from '@notify/runtime';
export { templateGet, type TemplateGetParams, type TemplateRecord } from './content/sql/template-get.js';
export { suppressionMatch, type SuppressionMatchParams, type SuppressionRecord } from '@notify/runtime';
export { suppressionMatchMany, type SuppressionMatchManyParams } from './content/sql/suppression-match-many.js';
// The dispatcher: consumer, delivery handler, retries (issue 4). Besides createDispatcher, the
// pieces the lab test composes without Kafka (handler, middleware, scheduler, planOutcome,
// recordOutcome, repair sweep) are public, so that test runs the production code and no copy.
export { createDispatcher, type Dispatcher, type DispatcherDeps } from './dispatcher.js';
export { dispatcherConfig, BATCHING_DEFAULTS, type DispatcherConfig, type DispatcherConfigOverrides, type RetryConfig } from './config.js';
export { nextAttemptAt, type NextAttemptParams } from './retry/backoff.js';
export { dispatcherTopicSuffixes, delayTiers, tierFor, formatTierName, type DelayTier } from './retry/delay-topics.js';
export {
  createDispatcherEvents,
  type DispatcherEventMap,
  type DispatcherEventName,
  type DispatcherListener,
  type DispatcherEvents,
  type OnDispatcherEvent,
} from './events.js';
export { createDeliveryHandler, createNotificationLoader, type DeliveryHandlerDeps } from './handler.js';
export type { DeliveryNotification, DeliveryRow } from './sql/notification-get-many.js';
export { createOutcomeWriter, type OutcomeWriter, type OutcomeWriterOptions, type OutcomeFlush } from './outcome-writer.js';
export { createBatchLoader, type BatchLoader, type BatchLoaderOptions } from './batch-loader.js';
export {
  compose,
  messageDueAt,
  orderingKey,
  fromKafkaMessage,
  headersToStrings,
  parseFailureCode,
  DEAD_LETTER_CODES,
  type DeadLetterCode,
  type InboundMessage,
  type HandleResult,
  type SkipReason,
  type MessageHandler,
  type Middleware,
} from './message.js';
export { deadLetter, deadLetterFor, createKafkaDeadLetterSink, type DeadLetter, type DeadLetterSink } from './middleware/dead-letter.js';
export { tracing, extractTraceContext, deliveryTraceId } from './middleware/tracing.js';
export { planOutcome, type AttemptResult, type OutcomePlan, type PlanOutcomeParams } from './outcome.js';
export { recordOutcome, recordOutcomes, outcomeMessages, outcomeRecordParams, type RecordOutcomeParams } from './record.js';
export { createKeyedScheduler, type KeyedScheduler, type KeyedSchedulerOptions, type Task, type TaskResult } from './scheduler.js';
export { deliveryLanes, type ConsumerStopReport, type DeliveryLane } from './consumer.js';
export { createRepairSweep, type RepairSweep, type RepairSweepDeps } from './repair.js';
export { createKafkaConsumerProgress, type ConsumerProgress, type PublishedRequest } from './consumer-progress.js';
export { createScheduleService, type ScheduleService, type ScheduleServiceDeps } from './schedule.js';
export {
  createRetentionService,
  type RetentionService,
  type RetentionServiceDeps,
  type RetentionConfig,
  type RetentionRound,
} from './retention/retention-service.js';
export {
  createCallbackService,
  type CallbackService,
  type CallbackServiceConfig,
  type CallbackServiceDeps,
} from './callbacks/callback-service.js';
