import { prepared, toExecutor, type TransactionLike } from './db/executor.js';
import type { Notification } from './db/schema.js';
import { type FieldIssue, IdempotencyConflictError, IdempotencyInProgressError, type NotifyError, ValidationError } from './errors.js';
import type { NotificationIntent } from './model/intent.js';

/** What `enqueue` needs besides the transaction. */
export interface EnqueueOptions {
  /** When the notification is created and first due (a test clock's now), truncated to milliseconds. Default: the database clock. */
  readonly now?: Date;
  /** Attempts before a notification is declared dead. Default: `notify_settings.max_attempts` (the service's NOTIFY_MAX_ATTEMPTS). */
  readonly maxAttempts?: number;
  /** Expiry when the intent names none. Default: `notify_settings.default_ttl_ms` (the service's NOTIFY_DEFAULT_TTL_MS). */
  readonly defaultTtlMs?: number;
}

/** The notification, and whether this call created it (false: an earlier request with the same key did). */
export interface EnqueueResult {
  readonly notification: Notification;
  readonly created: boolean;
}

/** Why PostgreSQL would not queue an intent, as `notify_enqueue_row` returns it. */
export interface Refusal {
  readonly code: string;
  readonly message: string;
  readonly errors: readonly FieldIssue[];
  readonly existing_id?: string;
}

type EnqueueRow = Notification & { readonly created: boolean; readonly refusal: Refusal | null };

// One round trip. The function validates, writes the notification and its outbox row, or
// finds the original of an idempotent repeat (notify_enqueue_item: migrations 0006, 0040 and
// 0150, which made it the one enqueue function). `(r.notification).*` returns the row's
// columns, so pg parses them exactly as for a SELECT * (timestamps as Date, jsonb as objects).
const ENQUEUE_SQL = prepared(
  'notify_enqueue_item_v1',
  'SELECT r.created, r.refusal, (r.notification).* FROM notify_enqueue_item($1::jsonb, $2::jsonb) AS r',
);

// JSON.stringify writes U+0000 as \u0000 and an unpaired surrogate as \udXXX (paired ones as
// themselves). PostgreSQL's jsonb input refuses both, so they never reach notify_enqueue_row.
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what PostgreSQL cannot store
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// SQLSTATEs of the jsonb input function: invalid text, untranslatable character, stack depth.
const JSON_INPUT_SQLSTATES = new Set(['22P02', '22P05', '54001']);
const SERIALIZATION_FAILURE = '40001';

/**
 * Records a notification intent in the caller's transaction: the `notifications` row (state
 * `queued`, due now or at `send_at`) and one outbox row: the delivery request, carrying the
 * `notification.queued` status event the relay publishes after it (a notification scheduled for
 * later: the event alone). If the caller rolls back, nothing is queued.
 *
 * `tx` may be a Kysely `Transaction` (or `Kysely`), or a `pg` client inside `BEGIN`.
 *
 * Validation, the rows and idempotency are PostgreSQL's `notify_enqueue_item` (migrations 0006, 0150,
 * docs/sql-enqueue.md), the same function other languages call: one implementation, one round
 * trip. With an idempotency key, a repeat of the same request returns the original with
 * `created: false`.
 *
 * Throws `ValidationError` (a stable `code` and every field issue) or `IdempotencyConflictError`
 * (the key was used for a different request); both leave the caller's transaction usable, as
 * they always did. `IdempotencyInProgressError` (the key's holder is not visible to a REPEATABLE
 * READ snapshot) means: roll back and retry the transaction.
 */
export async function enqueue(tx: TransactionLike, intent: NotificationIntent, options: EnqueueOptions = {}): Promise<EnqueueResult> {
  const json = intentJson(intent);
  const settings = enqueueSettings(options);
  let rows: EnqueueRow[];
  try {
    ({ rows } = await toExecutor(tx).query<EnqueueRow>(ENQUEUE_SQL, [json, settings]));
  } catch (err) {
    const sqlstate = (err as { code?: unknown }).code;
    // In REPEATABLE READ or SERIALIZABLE, when the key's holder committed after the caller's
    // snapshot was taken, PostgreSQL refuses the insert itself (serialization_failure). The
    // caller must retry the transaction, which is what this typed error says (the API: 409).
    if (sqlstate === SERIALIZATION_FAILURE && intent.idempotency_key !== undefined) throw new IdempotencyInProgressError({ cause: err });
    // The jsonb cast of $1 failed before the function ran (e.g. nesting thousands deep): the
    // caller's transaction is aborted, as for any SQL error, but the error is still a refusal.
    const issues = typeof sqlstate === 'string' && JSON_INPUT_SQLSTATES.has(sqlstate) ? unstorableIssues(intent) : [];
    if (issues.length > 0) throw invalid(issues, err);
    throw err;
  }
  const row = rows[0];
  if (!row) throw new Error('notify_enqueue_row returned no row');
  const { created, refusal, ...notification } = row;
  if (refusal) throw refusalError(refusal);
  return { notification, created };
}

/** The `options` argument of notify_enqueue_item and notify_enqueue_batch. */
export function enqueueSettings(options: EnqueueOptions): string {
  return JSON.stringify({ now: options.now?.toISOString(), max_attempts: options.maxAttempts, default_ttl_ms: options.defaultTtlMs });
}

/** The intent as JSON text PostgreSQL accepts, or a `ValidationError` naming what it cannot store. */
export function intentJson(intent: NotificationIntent): string {
  // A traceparent is kept only when well-formed, so one PostgreSQL cannot even store is dropped here.
  const { traceparent, ...rest } = intent;
  const sendable = typeof traceparent === 'string' && UNSTORABLE.test(traceparent) ? rest : intent;
  let json: string;
  try {
    json = JSON.stringify(sendable);
  } catch (err) {
    // RangeError: nested too deep for the stack; TypeError: a BigInt or a cycle.
    const issues = unstorableIssues(intent);
    throw invalid(issues.length > 0 ? issues : [{ path: '(root)', message: `must be JSON: ${(err as Error).message}` }], err);
  }
  if (UNSTORABLE_ESCAPE.test(json)) {
    const issues = unstorableIssues(intent);
    throw invalid(issues.length > 0 ? issues : [{ path: '(root)', message: 'must not contain U+0000 or unpaired surrogates' }]);
  }
  return json;
}

function invalid(issues: readonly FieldIssue[], cause?: unknown): ValidationError {
  const message = `invalid notification: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`;
  return new ValidationError('validation_failed', message, issues, cause === undefined ? undefined : { cause });
}

/** The typed error of a refusal. */
export function refusalError(refusal: Refusal): NotifyError {
  switch (refusal.code) {
    case 'validation_failed':
    case 'unknown_channel':
    case 'payload_too_large':
    case 'bad_expiry':
      return new ValidationError(refusal.code, refusal.message, refusal.errors);
    case 'idempotency_conflict':
      return new IdempotencyConflictError(refusal.existing_id ?? '');
    case 'idempotency_in_progress':
      return new IdempotencyInProgressError();
    default:
      throw new Error(`notify_enqueue_row refused with an unknown code ${JSON.stringify(refusal.code)}`);
  }
}

/**
 * Where the intent holds what cannot reach PostgreSQL as jsonb: a string or key with U+0000 or an
 * unpaired surrogate, or nesting deeper than 32 levels (the database's own limit, checked here
 * only when the JSON could not even be built or parsed). The first problem of each field, with
 * the paths and messages the database and the former TypeScript validator use.
 */
function unstorableIssues(intent: NotificationIntent): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (intent === null || typeof intent !== 'object') return issues;
  for (const [field, value] of Object.entries(intent)) {
    if (field === 'traceparent') continue;
    const problem = unstorableIn(value, field, 1);
    if (problem) issues.push(problem);
  }
  return issues;
}

function unstorableIn(value: unknown, path: string, depth: number): FieldIssue | null {
  if (typeof value === 'string') return UNSTORABLE.test(value) ? { path, message: 'must not contain U+0000 or unpaired surrogates' } : null;
  if (value === null || typeof value !== 'object') return null;
  if (depth > 32) return { path, message: 'must not nest deeper than 32 levels' };
  for (const [key, child] of Object.entries(value)) {
    const childPath = `${path}.${key}`;
    if (UNSTORABLE.test(key)) return { path: childPath, message: 'keys must not contain U+0000 or unpaired surrogates' };
    const problem = unstorableIn(child, childPath, depth + 1);
    if (problem) return problem;
  }
  return null;
}
