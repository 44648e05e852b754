// The public surface of @notify/outbox: what a domain service installs to enqueue notifications
// inside its own PostgreSQL transaction. Everything exported is documented where it is defined.
export {
  ERROR_CODES,
  type ErrorCode,
  type FieldIssue,
  NotifyError,
  ValidationError,
  IdempotencyConflictError,
  IdempotencyInProgressError,
  InvalidTransitionError,
  BatchRefusedError,
  type BatchItemError,
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
export { pooledRandomBytes } from './model/random-pool.js';
export { jsonbKeyOrder } from './jsonb.js';
export type { NotificationIntent } from './model/intent.js';
export { enqueue, type EnqueueOptions, type EnqueueResult } from './enqueue.js';
export { enqueueMany, MAX_BATCH_SIZE, type EnqueueManyOptions, type EnqueueManyResult } from './enqueue-many.js';
export {
  type SqlExecutor,
  type PgQueryable,
  type TransactionLike,
  type KyselyLike,
  fromKysely,
  fromPgClient,
  toExecutor,
  inTransaction,
  prepared,
  preparedName,
} from './db/executor.js';
export type {
  OutboxDatabase,
  NotificationsTable,
  OutboxTable,
  Notification,
  OutboxRow,
  NotificationPriority,
  NotificationOrdering,
} from './db/schema.js';
export { outboxInsert, type OutboxInsertParams, type OutboxMessage } from './sql/outbox-insert.js';
