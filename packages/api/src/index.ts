// The public surface of @notify/api. Everything exported is documented where it is defined.
export { createApp, type AppDeps } from './app.js';
export type { AppEnv, AuthContext } from './env.js';
export {
  PROBLEM_TYPE_BASE,
  PROBLEM_CATALOG,
  HTTP_PROBLEM_CODES,
  PROBLEM_CONTENT_TYPE,
  type ProblemCode,
  type ProblemDetails,
  ProblemError,
  problem,
  problemType,
  problemFromError,
  problemResponse,
} from './problem.js';
export {
  ListQuery,
  NotificationView,
  NotificationList,
  AttemptView,
  AttemptList,
  ActionView,
  ActionList,
  Problem,
  Health,
  MAX_PAGE_SIZE,
  DEFAULT_PAGE_SIZE,
} from './schemas.js';
export { buildOpenApiDocument, renderDocsPage } from './openapi.js';
export { API_KEY_PREFIX, hashApiKey, hashesEqual, generateApiKey, seededKeyId } from './api-key.js';
export { MAX_BODY_BYTES } from './middleware/json-body.js';
export { type ReadinessCheck } from './routes/ops.js';
export { cancelNotification, retryNotification, type ActionParams, type RetryParams, type ActionResult } from './notification-actions.js';
export { NOTIFICATION_ACTIONS, type NotificationAction } from './sql/notification-action-list.js';
export { createLogger, REDACT_PATHS, type CreateLoggerOptions } from './observability/logger.js';
export {
  createMetrics,
  type Metrics,
  type CreateMetricsOptions,
  type AttemptObservation,
  PROVIDER_LATENCY_BUCKETS,
  HTTP_DURATION_BUCKETS,
} from './observability/metrics.js';
export { AsyncLocalContextManager, installTraceContext } from './observability/context-manager.js';
export { watchRelay, watchDispatcher, type RelayEventSource, type DispatcherEventSource } from './observability/lifecycle-metrics.js';
export {
  parseTraceparent,
  formatTraceparent,
  newTraceparent,
  withServerSpan,
  TRACER_NAME,
  type RequestTrace,
} from './observability/tracing.js';
export { runNotify, USAGE, type ProcessHooks } from './cli/main.js';
export { startNotify, parseRoles, ROLES, type Role, type RunningNotify, type StartDeps } from './cli/start.js';
export { CliError, type CliIo } from './cli/cli-error.js';
export { ensureTopics } from './cli/preflight.js';
