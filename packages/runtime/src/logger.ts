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
};
