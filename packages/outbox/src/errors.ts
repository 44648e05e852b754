/** Stable machine-readable codes of the errors `enqueue` and the state machine throw. The API uses them in its problem+json `type`; `notify_enqueue` puts them in its SQL error messages. */
export const ERROR_CODES = [
  'validation_failed',
  'unknown_channel',
  'payload_too_large',
  'bad_expiry',
  'idempotency_conflict',
  'idempotency_in_progress',
  'invalid_transition',
  'batch_refused',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** One problem with one field of an input, as shown to the caller. */
export interface FieldIssue {
  readonly path: string;
  readonly message: string;
}

/** Base class of every error this project throws on purpose: a stable `code` and a message a person can act on. */
export class NotifyError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** The intent (or request) is malformed; `issues` lists every field that is wrong. */
export class ValidationError extends NotifyError {
  readonly issues: readonly FieldIssue[];
  constructor(
    code: Extract<ErrorCode, 'validation_failed' | 'unknown_channel' | 'payload_too_large' | 'bad_expiry'>,
    message: string,
    issues: readonly FieldIssue[] = [],
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
    this.issues = issues;
  }
}

/** The idempotency key was used before with a different request. */
export class IdempotencyConflictError extends NotifyError {
  readonly existingId: string;
  constructor(existingId: string) {
    super(
      'idempotency_conflict',
      `this Idempotency-Key was already used for a different request (notification ${existingId}); use a new key for a new request`,
    );
    this.existingId = existingId;
  }
}

/** The row holding this idempotency key is not visible to the caller's snapshot yet (REPEATABLE READ caller); retry the transaction. */
export class IdempotencyInProgressError extends NotifyError {
  constructor(options?: { cause?: unknown }) {
    super('idempotency_in_progress', 'a concurrent request with the same Idempotency-Key has not finished; retry shortly', options);
  }
}

/** A state change that the state machine does not allow. */
export class InvalidTransitionError extends NotifyError {
  constructor(from: string, to: string) {
    super('invalid_transition', `a notification cannot go from ${from} to ${to}`);
  }
}

/** One refused item of a batch: its index in the batch and why. */
export interface BatchItemError {
  readonly index: number;
  readonly error: NotifyError;
}

/** An atomic batch (`enqueueMany(…, { atomic: true })`) had a refused item, so nothing of it was queued. */
export class BatchRefusedError extends NotifyError {
  readonly items: readonly BatchItemError[];
  constructor(items: readonly BatchItemError[]) {
    super(
      'batch_refused',
      `the atomic batch was refused, nothing was queued: ${items.length} item(s) refused (first: item ${items[0]?.index}: ${items[0]?.error.message})`,
    );
    this.items = items;
  }
}
