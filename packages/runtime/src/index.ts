// The public surface of @notify/runtime: the small mechanisms every role of the service runs on,
// each with one home. Everything exported is documented where it is defined.
export { type Clock, systemClock } from './clock.js';
export { type Logger, silentLogger } from './logger.js';
export { ConfigError, errorMessage, errorSummary, type ErrorSummary } from './errors.js';
export { createEmitter, type Emitter, type Listener } from './events.js';
export { backoffDelayMs, type BackoffParams } from './backoff.js';
export { createPeriodicService, type PeriodicService, type PeriodicServiceOptions } from './periodic.js';
export { withTimeout, settlesWithin, delay } from './timeout.js';
export { createBatchTimer, type BatchTimer } from './batch-timer.js';
export { parseTraceparent, formatTraceparent, type TraceContext } from './traceparent.js';
export { createDb, type CreateDbOptions } from './db.js';
