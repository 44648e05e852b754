import { prepared, toExecutor, type TransactionLike } from './db/executor.js';
import type { Notification } from './db/schema.js';
import { type FieldIssue, IdempotencyConflictError, IdempotencyInProgressError, type NotifyError, ValidationError } from './errors.js';
import type { EnqueueOptions } from './enqueue-options.js';
import { PLAIN_ENQUEUE_SQL, type PlainWrite, plainWrite, UNSTORABLE, UNSTORABLE_ESCAPE } from './enqueue-plain.js';
import { nonFiniteIssue } from './jsonb.js';
import type { NotificationIntent } from './model/intent.js';

export type { EnqueueOptions } from './enqueue-options.js';

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

// What notify_enqueue_item computed for a created row: the id, the instants, the settings it
// applied, the kept traceparent, the request hash and the jsonb columns as PostgreSQL normalised
// them. The other columns of a created row are the intent's own strings or constants
// (createdNotification below), so PostgreSQL does not print them and pg does not parse them
// again: for the bench's webhook intent that is 19 of the row's 28 columns (BENCHMARKS.md,
// "enqueue(), session 7"). A repeat of an idempotency key (created false) reads the original row whole.
/** The columns of a created row that PostgreSQL computed (`LEAN_COLUMNS`), for `createdNotification`. */
export interface ComputedColumns {
  readonly id: string;
  readonly data: Notification['data'];
  readonly metadata: Notification['metadata'];
  readonly request_hash: string | null;
  readonly max_attempts: number;
  readonly expires_at: Date;
  readonly traceparent: string | null;
  readonly created_at: Date;
  readonly send_at: Date | null;
  /** send_at is ahead of created_at: next_attempt_at and held_until are send_at. */
  readonly held: boolean | null;
}

interface EnqueueRow extends ComputedColumns {
  readonly created: boolean;
  readonly refusal: Refusal | null;
}

/** The `ComputedColumns` of a `notify_enqueue_item` result `r` (or a `notify_enqueue_batch` row `r`), in SQL. */
export const LEAN_COLUMNS = `(r.notification).id, (r.notification).data, (r.notification).metadata,
          (r.notification).request_hash, (r.notification).max_attempts, (r.notification).expires_at,
          (r.notification).traceparent, (r.notification).created_at, (r.notification).send_at,
          (r.notification).held_until IS NOT NULL AS held`;

// One round trip. The function validates, writes the notification and its outbox row, or
// finds the original of an idempotent repeat (notify_enqueue_item: migrations 0006, 0040, 0150
// and 0160, which made it the one enqueue function). pg parses each column by its type exactly
// as for a SELECT * (timestamps as Date, jsonb as objects).
const ENQUEUE_SQL = prepared(
  'notify_enqueue_item_v2',
  `SELECT r.created, r.refusal, ${LEAN_COLUMNS}
     FROM notify_enqueue_item($1::jsonb, $2::jsonb) AS r`,
);

// Every column of `Notification`, named (the compiler holds the list to the type). A prepared
// statement's result type is fixed when it is first prepared on a connection: with `SELECT *`, a
// migration that adds a column to notifications failed every later repeat of a key on that
// connection ("cached plan must not change result type", 0A000) until it closed, be it a
// caller's pooled pg client or a running service's pool.
const NOTIFICATION_COLUMNS: Record<keyof Notification, true> = {
  id: true,
  tenant_id: true,
  channel: true,
  recipient: true,
  subject: true,
  body: true,
  template: true,
  template_version: true,
  data: true,
  category: true,
  metadata: true,
  idempotency_key: true,
  request_hash: true,
  state: true,
  dead_reason: true,
  attempts: true,
  max_attempts: true,
  next_attempt_at: true,
  last_error: true,
  expires_at: true,
  traceparent: true,
  created_at: true,
  updated_at: true,
  sent_at: true,
  send_at: true,
  held_until: true,
  priority: true,
  ordering: true,
};

// The original of a repeated idempotency key, whole.
const NOTIFICATION_SQL = prepared(
  'notification_by_id_v2',
  `SELECT ${Object.keys(NOTIFICATION_COLUMNS).join(', ')} FROM notifications WHERE id = $1`,
);

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
 * docs/sql-enqueue.md), the same function other languages call, in one round trip. A plain intent
 * (tenant_id, channel, to, body, optionally subject, traceparent and data, every value one the
 * function accepts) takes a faster path to the same rows: computed here, written by one INSERT
 * (enqueue-plain.ts); its instants then come from this process's clock unless `options.now` is
 * given. With an idempotency key, a repeat of the same request returns the original with
 * `created: false`.
 *
 * Throws `ValidationError` (a stable `code` and every field issue) or `IdempotencyConflictError`
 * (the key was used for a different request); both leave the caller's transaction usable, as
 * they always did. `IdempotencyInProgressError` (the key's holder is not visible to a REPEATABLE
 * READ snapshot) means: roll back and retry the transaction.
 */
export async function enqueue(tx: TransactionLike, intent: NotificationIntent, options: EnqueueOptions = {}): Promise<EnqueueResult> {
  const plain = plainWrite(intent, options);
  if (plain !== null) {
    const { rows } = await toExecutor(tx).query<PlainSettings>(PLAIN_ENQUEUE_SQL, plain.values);
    const row = rows[0];
    if (!row) throw new Error('the plain enqueue statement returned no row');
    return { notification: plainNotification(intent, plain, row), created: true };
  }
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
  if (!row) throw new Error('notify_enqueue_item returned no row');
  if (row.refusal) throw refusalError(row.refusal);
  const notification = row.created && storedAsGiven(intent) ? createdNotification(intent, row) : await storedNotification(tx, row.id);
  return { notification, created: row.created };
}

/** What a plain statement returns: the settings PostgreSQL applied (notify_settings, unless the options named them). */
export type PlainSettings = Pick<ComputedColumns, 'max_attempts' | 'expires_at'>;

/** The row a plain write created for `intent` (enqueue-plain.ts): its own values, the constants of a new notification and the applied settings. */
export function plainNotification(intent: NotificationIntent, plain: PlainWrite, settings: PlainSettings): Notification {
  return createdNotification(intent, {
    id: plain.id,
    data: plain.data,
    metadata: {},
    request_hash: null,
    max_attempts: settings.max_attempts,
    // its own Date per notification of a batch, as pg parses one per row
    expires_at: copy(settings.expires_at),
    traceparent: plain.traceparent,
    created_at: plain.createdAt,
    send_at: null,
    held: null,
  });
}

const STRING_FIELDS = [
  'tenant_id',
  'channel',
  'to',
  'subject',
  'body',
  'template',
  'category',
  'idempotency_key',
  'priority',
  'ordering',
] as const;

/**
 * Whether PostgreSQL stored the intent's values as they are in JavaScript: it accepted each as a
 * JSON string (template_version: a number), so a plain string here is the stored one. Anything
 * else (a caller's object with toJSON, say) is read back from the row instead.
 */
export function storedAsGiven(intent: NotificationIntent): boolean {
  for (const field of STRING_FIELDS) {
    const value = intent[field];
    if (value !== undefined && typeof value !== 'string') return false;
  }
  return intent.template_version === undefined || typeof intent.template_version === 'number';
}

/** A notification row whole: the original of a repeated key, or a created row storedAsGiven cannot rebuild. */
export async function storedNotification(tx: TransactionLike, id: string): Promise<Notification> {
  const { rows } = await toExecutor(tx).query<Notification>(NOTIFICATION_SQL, [id]);
  // notify_enqueue_item read it in this statement's snapshot; a READ COMMITTED caller's next
  // statement can miss it only if it was deleted in between: the holder is gone, so retry.
  if (!rows[0]) throw new IdempotencyInProgressError();
  return rows[0];
}

/**
 * The row notify_enqueue_item wrote for `intent`: the columns it computed (`row`), the intent's
 * own values (storedAsGiven) and the constants of a new notification. Each instant is its own
 * Date, as pg would have parsed each column.
 */
export function createdNotification(intent: NotificationIntent, row: ComputedColumns): Notification {
  const { created_at: createdAt, send_at: sendAt } = row;
  return {
    id: row.id,
    tenant_id: intent.tenant_id,
    channel: intent.channel as Notification['channel'],
    recipient: intent.to,
    subject: intent.subject ?? null,
    body: intent.body ?? null,
    template: intent.template ?? null,
    template_version: intent.template_version ?? null,
    data: row.data,
    category: intent.category ?? null,
    metadata: row.metadata,
    idempotency_key: intent.idempotency_key ?? null,
    request_hash: row.request_hash,
    state: 'queued',
    dead_reason: null,
    attempts: 0,
    max_attempts: row.max_attempts,
    next_attempt_at: row.held ? copy(sendAt) : copy(createdAt),
    last_error: null,
    expires_at: row.expires_at,
    traceparent: row.traceparent,
    created_at: createdAt,
    updated_at: copy(createdAt),
    sent_at: null,
    send_at: sendAt,
    held_until: row.held ? copy(sendAt) : null,
    priority: intent.priority ?? 'normal',
    ordering: intent.ordering ?? 'relaxed',
  };
}

// A Date of the same instant (pg's own type parser may have been replaced: then the value as it is).
function copy<T>(value: T): T {
  return value instanceof Date ? (new Date(value.getTime()) as T) : value;
}

/** The `options` argument of notify_enqueue_item and notify_enqueue_batch. */
export function enqueueSettings(options: EnqueueOptions): string {
  return JSON.stringify({ now: options.now?.toISOString(), max_attempts: options.maxAttempts, default_ttl_ms: options.defaultTtlMs });
}

/** The intent as JSON text PostgreSQL accepts, or a `ValidationError` naming what it cannot store. */
export function intentJson(intent: NotificationIntent): string {
  const nonFinite = nonFiniteIssue(intent, '', 0);
  if (nonFinite) throw invalid([nonFinite]);
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
