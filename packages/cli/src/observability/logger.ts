import { pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
import type { Config } from '../config.js';

/**
 * Paths pino removes before writing a line. We never put headers, bodies or config in log
 * objects in the first place; this is the second line of defence if someone does.
 */
export const REDACT_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'apiKey',
  '*.apiKey',
  'key',
  'password',
  '*.password',
  'authToken',
  '*.authToken',
  'signingSecret',
  '*.signingSecret',
  'body',
  '*.body',
] as const;

/** Options of `createLogger`. */
export interface CreateLoggerOptions {
  readonly level: Config['logLevel'];
  /** Where lines go; stdout by default. Tests pass a stream to read lines back. */
  readonly destination?: DestinationStream;
  /** Fields on every line, e.g. `{ role: 'api' }`. */
  readonly base?: Record<string, unknown>;
}

/**
 * The process logger: one JSON object per line with `level` as a label, an ISO `time`, and the
 * ids it is given. Field names are camelCase across every role (`notificationId`, `tenantId`,
 * `traceId`, `reqId`, `apiKeyId`, `route`, `status`, `durationMs`; docs/observability.md).
 */
export function createLogger(options: CreateLoggerOptions): PinoLogger {
  return pino(
    {
      level: options.level,
      base: { service: 'notify', ...options.base },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: [...REDACT_PATHS], censor: '[redacted]' },
    },
    options.destination,
  );
}
