// The public surface of @notify/runtime: the small mechanisms every role of the service runs on,
// each with one home. Everything exported is documented where it is defined.
export { type Clock, systemClock } from './clock.js';
export { type Logger, silentLogger } from './logger.js';
export { ConfigError, errorMessage, errorSummary, type ErrorSummary } from './errors.js';
export { createEmitter, type Emitter, type Listener } from './events.js';
export { backoffDelayMs, type BackoffParams } from './backoff.js';
export { createPeriodicService, failureBackoffMs, type PeriodicService, type PeriodicServiceOptions } from './periodic.js';
export { withTimeout, settlesWithin, delay } from './timeout.js';
export { onAbort } from './abort.js';
export { createBatchTimer, type BatchTimer } from './batch-timer.js';
export { parseTraceparent, formatTraceparent, type TraceContext } from './traceparent.js';
export { createDb, type CreateDbOptions } from './db.js';
export {
  parseTemplate,
  templateVariables,
  renderTemplate,
  checkTemplate,
  escapeHtml,
  TemplateSyntaxError,
  type TemplatePart,
  type TemplateProblem,
  type RenderMode,
  type RenderResult,
} from './content/template.js';
export { normalizeRecipient } from './content/recipient.js';
export {
  templateInsert,
  TemplateRejectedError,
  TemplateChannelConflictError,
  type TemplateInsertParams,
} from './content/sql/template-insert.js';
export { suppressionInsert, type SuppressionInsertParams } from './content/sql/suppression-insert.js';
export { suppressionDelete, type SuppressionDeleteParams } from './content/sql/suppression-delete.js';
export { suppressionMatch, type SuppressionMatchParams, type SuppressionRecord } from './content/sql/suppression-match.js';
export { parseSecretsKey, sealSecret, openSecret, SecretsKeyError } from './secret-box.js';
