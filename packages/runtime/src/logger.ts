/**
 * The logging port: the subset of pino's API we call, so any pino logger fits and tests can pass
 * `silentLogger` or a capturing one. Log ids and provider response codes, never bodies, recipients'
 * message contents or secrets.
 */
export interface Logger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
  /**
   * Whether a line at `level` would be written (pino's). Optional: a hot path asks it before it
   * builds the fields of a line it may not write; absent, it builds them.
   */
  isLevelEnabled?(level: 'error' | 'warn' | 'info' | 'debug'): boolean;
}

/** A logger that drops everything. */
export const silentLogger: Logger = {
  error() {},
  warn() {},
  info() {},
  debug() {},
  child() {
    return silentLogger;
  },
  isLevelEnabled: () => false,
};
