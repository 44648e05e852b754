/** A configuration value is missing or invalid; the message names the variable (or `component.field`). */
export class ConfigError extends Error {
  readonly code = 'config_invalid' as const;
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
    this.variable = variable;
  }
}

/** The message of anything thrown, for logs and stored errors (never the stack, never request data). */
export function errorMessage(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return String(err);
}

/** An error for a structured log line: its class, code and message, and the same for its cause. Never request data. */
export interface ErrorSummary {
  readonly type: string;
  readonly message: string;
  readonly code?: string | number;
  readonly cause?: ErrorSummary;
}

/** Summarises `err` for a log line (`{ err: errorSummary(err) }`); follows `cause` up to 3 levels. */
export function errorSummary(err: unknown, depth = 0): ErrorSummary {
  if (!(err instanceof Error)) return { type: typeof err, message: String(err) };
  const code = (err as { code?: unknown }).code;
  return {
    type: err.name,
    message: err.message,
    ...(typeof code === 'string' || typeof code === 'number' ? { code } : {}),
    ...(err.cause !== undefined && depth < 3 ? { cause: errorSummary(err.cause, depth + 1) } : {}),
  };
}
