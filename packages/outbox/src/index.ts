// The public surface of @notify/outbox. Everything exported is documented where it is defined.
export { type Clock, systemClock } from './clock.js';
export {
  type Config,
  type Env,
  type RetryConfig,
  loadConfig,
  DEFAULT_DATABASE_URL,
  DEFAULT_KAFKA_BROKERS,
} from './config.js';
export {
  ERROR_CODES,
  type ErrorCode,
  type FieldIssue,
  NotifyError,
  ValidationError,
  IdempotencyConflictError,
  IdempotencyInProgressError,
  ConfigError,
  InvalidTransitionError,
} from './errors.js';
export {
  NOTIFICATION_STATES,
  type NotificationState,
  TRANSITIONS,
  TERMINAL_STATES,
  DEAD_REASONS,
  type DeadReason,
  ATTEMPT_OUTCOMES,
  type AttemptOutcome,
  CHANNELS,
  type Channel,
  canTransition,
  assertTransition,
  isTerminal,
} from './model/state.js';
export { newNotificationId, isNotificationId, NOTIFICATION_ID_PREFIX } from './model/id.js';
export {
  IntentFields,
  type NotificationIntent,
  type ValidIntent,
  validateIntent,
  recipientProblem,
  MAX_CONTENT_BYTES,
} from './model/intent.js';
export { canonicalJson, requestHash } from './idempotency.js';
export { enqueue, type EnqueueOptions, type EnqueueResult } from './enqueue.js';
export {
  type SqlExecutor,
  type PgQueryable,
  type TransactionLike,
  fromKysely,
  fromPgClient,
  toExecutor,
  prepared,
  preparedName,
} from './db/executor.js';
export type {
  Database,
  NotificationsTable,
  AttemptsTable,
  OutboxTable,
  ApiKeysTable,
  TemplatesTable,
  SuppressionsTable,
  TenantsTable,
  Notification,
  Attempt,
  OutboxRow,
  NewAttempt,
} from './db/schema.js';
export { outboxInsert, type OutboxInsertParams } from './sql/outbox-insert.js';
export {
  CONTRACT_VERSION,
  HEADERS,
  TOPICS,
  topicName,
  messageKey,
  DeliveryRequestV1,
  StatusEventV1,
  STATUS_EVENT_TYPES,
  type StatusEventType,
  type OutboxMessage,
  type MessageSubject,
  type StatusEventFields,
  type ParseFailure,
  buildDeliveryRequest,
  buildStatusEvent,
  parseDeliveryRequest,
  parseStatusEvent,
} from './contract/messages.js';
export { createDb, type CreateDbOptions } from './db/create-db.js';
export { type Logger, silentLogger } from './logger.js';
export type { RateLimitConfig } from './config.js';
