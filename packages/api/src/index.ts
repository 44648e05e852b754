// The public surface of @notify/api: the HTTP API (createApp) and what the notify command reuses from it. Everything exported is documented where it is defined.
export { createApp, createAdminApp, type AppDeps, type AdminAppDeps } from './app.js';
export { apiRateLimit, type ApiRateLimits, type TokenRate } from './middleware/rate-limit.js';
export type { EventLoopPressure } from './middleware/pressure.js';
export type { RateLimitCheck } from './env.js';
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
  answerClientError,
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
  BatchRequest,
  BatchResponse,
  MAX_BATCH_ITEMS,
} from './schemas.js';
export { buildOpenApiDocument, renderDocsPage } from './openapi.js';
export { API_KEY_PREFIX, hashApiKey, hashesEqual, generateApiKey, seededKeyId } from './api-key.js';
export { MAX_BODY_BYTES, MAX_BATCH_BODY_BYTES } from './middleware/json-body.js';
export { type ReadinessCheck } from './routes/ops.js';
export { cancelNotification, retryNotification, type ActionParams, type RetryParams, type ActionResult } from './notification-actions.js';
export { NOTIFICATION_ACTIONS, type NotificationAction } from './sql/notification-action-list.js';
export { type HttpMetrics, noMetrics } from './metrics.js';
export { NoContentServerResponse } from './no-content-response.js';
export { parseTraceparent, formatTraceparent, newTraceparent, withServerSpan, TRACER_NAME, type RequestTrace } from './tracing.js';
export { apiKeyFindByHash, type ApiKeyFindByHashParams } from './sql/api-key-find-by-hash.js';
export { apiKeyInsert, type ApiKeyInsertParams } from './sql/api-key-insert.js';
export { apiKeyList, type ApiKeyListParams } from './sql/api-key-list.js';
export { apiKeyRevoke, type ApiKeyRevokeParams } from './sql/api-key-revoke.js';
export { tenantEnsure } from './sql/tenant-ensure.js';
export {
  webhookSecretSealLegacy,
  type WebhookSecretSealLegacyParams,
  type WebhookSecretSealLegacyResult,
} from './sql/webhook-secret-seal-legacy.js';
export { consoleApp, type ConsoleOptions } from './console/console.js';
export type { PipelineProbe } from './console/pipeline.js';
export { BULK_RETRY_MAX, bulkRetry, type BulkRetryParams, type BulkRetryResult } from './notification-actions.js';
