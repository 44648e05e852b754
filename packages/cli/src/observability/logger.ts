import { destination, pino, type DestinationStream, type Logger as PinoLogger } from 'pino';
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
  /**
   * Where lines go. Default: stdout, written asynchronously (see `createLogger`). Tests pass a
   * stream to read lines back.
   */
  readonly destination?: DestinationStream;
  /** Fields on every line, e.g. `{ role: 'api' }`. */
  readonly base?: Record<string, unknown>;
}

/**
 * The process logger: one JSON object per line with `level` as a label, an ISO `time`, and the
 * ids it is given. Field names are camelCase across every role (`notificationId`, `tenantId`,
 * `traceId`, `reqId`, `apiKeyId`, `route`, `status`, `durationMs`; docs/observability.md).
 *
 * Stdout is written asynchronously (`pino.destination({ sync: false })`): a line is handed to
 * the kernel at once when no write is under way, and the lines logged while one is coalesce into
 * the next write, instead of one blocking `write(2)` per line. pino writes what is buffered
 * synchronously on the process's `exit` event (after a graceful stop, an uncaught exception or
 * `process.exit`); only a SIGKILL, a crash of node itself or a power cut can lose the last lines.
 * Measured: the synchronous writes were 3.5 % of the service process's busy CPU in a backlog drain
 * (`pnpm bench --quick --profile end-to-end`, one line per delivery); BENCHMARKS.md has the
 * before/after of this change together with `notify start` no longer installing a context manager.
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
    options.destination ?? destination({ dest: 1, sync: false }),
  );
}
