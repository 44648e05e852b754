// The public surface of @notify/cli: the `notify` command's pieces, for the bin, tests and the
// bench. Configuration, the wiring of the roles, and the metrics of every role live here.
// Everything exported is documented where it is defined.
export { loadConfig, DEFAULT_DATABASE_URL, DEFAULT_KAFKA_BROKERS, type Config, type Env } from './config.js';
export { relayConfigFrom, dispatcherConfigFrom } from './role-configs.js';
export { runNotify, USAGE, type ProcessHooks } from './main.js';
export { startNotify, type RunningNotify, type StartDeps } from './start.js';
export { parseRoles, ROLES, type Role } from './roles.js';
export { CliError, type CliIo } from './cli-error.js';
export { ensureTopics } from './preflight.js';
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
