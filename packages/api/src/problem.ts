import { BatchRefusedError, type ErrorCode, type FieldIssue, NotifyError, ValidationError, IdempotencyConflictError } from '@notify/outbox';

/** Where problem types live. A `type` is this base plus the code, e.g. `https://notify.dev/problems/not_found`. */
export const PROBLEM_TYPE_BASE = 'https://notify.dev/problems/';

/** Problem codes that only the HTTP layer raises (the rest are `ErrorCode`s from @notify/outbox). */
export const HTTP_PROBLEM_CODES = [
  'unauthorized',
  'not_found',
  'malformed_json',
  'invalid_query',
  'unsupported_media_type',
  'notification_expired',
  'not_ready',
  'database_unreachable',
  'internal_error',
  'template_invalid',
  'in_use',
  'secrets_key_missing',
  'rate_limited',
  'callback_url_refused',
  'overloaded',
  'unstorable_text',
  'malformed_request',
  'request_timeout',
  'headers_too_large',
  'method_not_allowed',
  'template_channel_conflict',
  'webhook_secret_current',
] as const;

/** Every code that can appear in a problem `type`. Stable: clients may switch on them. */
export type ProblemCode = ErrorCode | (typeof HTTP_PROBLEM_CODES)[number];

/** The HTTP status and title of each code. One table, so a code never appears with two statuses. */
export const PROBLEM_CATALOG: { readonly [C in ProblemCode]: { readonly status: number; readonly title: string } } = {
  validation_failed: { status: 422, title: 'The request is not valid' },
  unknown_channel: { status: 422, title: 'Unknown channel' },
  bad_expiry: { status: 422, title: 'Invalid expiry' },
  idempotency_conflict: { status: 422, title: 'Idempotency-Key reused with a different request' },
  payload_too_large: { status: 413, title: 'Request body too large' },
  idempotency_in_progress: { status: 409, title: 'A request with this Idempotency-Key is in progress' },
  batch_refused: { status: 422, title: 'An item of the atomic batch was refused; nothing was queued' },
  invalid_transition: { status: 409, title: 'The notification is not in a state that allows this' },
  notification_expired: { status: 409, title: 'The notification has expired' },
  database_unreachable: { status: 503, title: 'Database unreachable' },
  unauthorized: { status: 401, title: 'Missing or invalid API key' },
  not_found: { status: 404, title: 'Not found' },
  malformed_json: { status: 400, title: 'Malformed JSON' },
  invalid_query: { status: 400, title: 'Invalid query parameters' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  not_ready: { status: 503, title: 'Not ready' },
  internal_error: { status: 500, title: 'Internal server error' },
  template_invalid: { status: 422, title: 'The template does not render' },
  in_use: { status: 409, title: 'Still in use' },
  secrets_key_missing: { status: 503, title: 'NOTIFY_SECRETS_KEY is not set' },
  rate_limited: { status: 429, title: 'Too many requests' },
  callback_url_refused: { status: 422, title: 'The callback URL is refused by the SSRF policy' },
  overloaded: { status: 503, title: 'The API is overloaded: too many requests in progress, or its event loop too busy' },
  unstorable_text: { status: 400, title: 'The request holds text PostgreSQL cannot store' },
  malformed_request: { status: 400, title: 'Malformed HTTP request' },
  request_timeout: { status: 408, title: 'The request did not arrive in time' },
  headers_too_large: { status: 431, title: 'Request header fields too large' },
  method_not_allowed: { status: 405, title: 'Method not allowed on this path' },
  template_channel_conflict: { status: 409, title: "A new version cannot change the template's channel" },
  webhook_secret_current: { status: 409, title: 'The current signing secret cannot be retired: rotate it' },
};

/** An RFC 9457 problem details object, as this API renders it. */
export interface ProblemDetails {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  /** The request path the problem is about. */
  readonly instance?: string;
  /** The stable code (the last segment of `type`), for clients that prefer not to parse URLs. */
  readonly code: ProblemCode;
  /** Field-level issues of a validation problem. */
  readonly errors?: readonly FieldIssue[];
  /** Extension members, e.g. `existing_id` on an idempotency conflict. */
  readonly [extension: string]: unknown;
}

/** An error the HTTP layer turns into a problem response with its code's status. */
export class ProblemError extends Error {
  readonly code: ProblemCode;
  readonly extensions: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;
  constructor(
    code: ProblemCode,
    detail: string,
    options: { extensions?: Record<string, unknown>; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(detail, { cause: options.cause });
    this.name = 'ProblemError';
    this.code = code;
    this.extensions = options.extensions ?? {};
    this.headers = options.headers ?? {};
  }
}

/** The problem `type` URI of a code. */
export function problemType(code: ProblemCode): string {
  return `${PROBLEM_TYPE_BASE}${code}`;
}

/** Builds the problem body for a code. */
export function problem(code: ProblemCode, detail: string, extensions: Record<string, unknown> = {}, instance?: string): ProblemDetails {
  const { status, title } = PROBLEM_CATALOG[code];
  return { type: problemType(code), title, status, detail, ...(instance ? { instance } : {}), code, ...extensions };
}

/**
 * Maps any thrown value to a problem. Our typed errors keep their code and message; anything
 * else is a 500 whose detail says nothing about internals (the log has the error).
 */
export function problemFromError(
  err: unknown,
  instance?: string,
): { body: ProblemDetails; headers: Record<string, string>; expected: boolean } {
  if (err instanceof ProblemError) {
    return { body: problem(err.code, err.message, { ...err.extensions }, instance), headers: { ...err.headers }, expected: true };
  }
  if (err instanceof ValidationError) {
    return { body: problem(err.code, err.message, { errors: err.issues }, instance), headers: {}, expected: true };
  }
  if (err instanceof IdempotencyConflictError) {
    return { body: problem(err.code, err.message, { existing_id: err.existingId }, instance), headers: {}, expected: true };
  }
  if (err instanceof BatchRefusedError) {
    const items = err.items.map((i) => ({ index: i.index, problem: problemFromError(i.error).body }));
    return { body: problem(err.code, err.message, { items }, instance), headers: {}, expected: true };
  }
  if (err instanceof NotifyError && err.code in PROBLEM_CATALOG) {
    const headers: Record<string, string> = err.code === 'idempotency_in_progress' ? { 'retry-after': '1' } : {};
    return { body: problem(err.code, err.message, {}, instance), headers, expected: true };
  }
  if (isUnstorableText(err)) {
    return {
      body: problem('unstorable_text', 'a value holds U+0000 or another character PostgreSQL text cannot store; remove it', {}, instance),
      headers: {},
      expected: true,
    };
  }
  if (isDatabaseUnreachable(err)) {
    return {
      body: problem('database_unreachable', 'the database is not reachable right now; retry later', {}, instance),
      headers: { 'retry-after': '5' },
      expected: false,
    };
  }
  return {
    body: problem('internal_error', 'an unexpected error occurred; it has been logged', {}, instance),
    headers: {},
    expected: false,
  };
}

// SQLSTATEs of a parameter PostgreSQL cannot hold as text or jsonb: U+0000 in a text value
// (character_not_in_repertoire), \u0000 in a jsonb one (untranslatable_character). Every value
// a statement gets comes from the request or from rows PostgreSQL already holds, so the request
// is at fault: a 400, where it was a 500 (GET /v1/notifications?to=a%00b).
const UNSTORABLE_SQLSTATES = new Set(['22021', '22P05']);

/** Whether `err` is PostgreSQL refusing a value of the request as text (U+0000). */
export function isUnstorableText(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && UNSTORABLE_SQLSTATES.has(code);
}

const UNREACHABLE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  '57P01',
  '57P03',
  '08006',
  '08001',
]);

function isDatabaseUnreachable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && UNREACHABLE_ERRNOS.has(code)) return true;
  const message = err instanceof Error ? err.message : '';
  return /Connection terminated|timeout exceeded when trying to connect/i.test(message);
}

/** The media type of every error response. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** A problem body as a `Response`. */
export function problemResponse(body: ProblemDetails, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...headers },
  });
}

/** The problem of each parser error Node gives its own status (431, 413, 408); any other is `MALFORMED_REQUEST`. */
const CLIENT_ERRORS: ReadonlyMap<string, readonly [ProblemCode, string]> = new Map([
  ['HPE_HEADER_OVERFLOW', ['headers_too_large', 'the request headers are larger than the server accepts']],
  ['HPE_CHUNK_EXTENSIONS_OVERFLOW', ['payload_too_large', 'the chunk extensions are larger than the server accepts']],
  ['ERR_HTTP_REQUEST_TIMEOUT', ['request_timeout', 'the request did not arrive completely in time']],
]);
const MALFORMED_REQUEST = ['malformed_request', 'the request is not valid HTTP/1.1 (its request line, a header, or its length)'] as const;

/** The parts of a socket `answerClientError` uses (`_httpMessage`: Node's response in flight on it, if any). */
interface ClientSocket {
  readonly writable: boolean;
  readonly _httpMessage?: { readonly headersSent?: boolean } | null;
  end(data: string): void;
  destroy(): void;
}

/**
 * An HTTP server's `clientError` listener: a request Node's parser refuses before any route sees it
 * (a malformed request line or header, a body longer than its Content-Length read as the next
 * request, headers over the limit, a request too slow to arrive) is answered with a problem+json
 * body as every other error is, with the status Node would give it, and the connection is closed.
 * Without it Node writes a bare `400 Bad Request` (431, 413, 408) with no body.
 */
export function answerClientError(err: Error & { code?: string }, socket: ClientSocket): void {
  // As Node's own handler: nothing is written once a response on this connection has begun (a
  // pipelined request refused while the one before it is answered), where a status line in the
  // middle of that response would corrupt what the client reads.
  if (err.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent === true) {
    socket.destroy();
    return;
  }
  const [code, detail] = CLIENT_ERRORS.get(err.code ?? '') ?? MALFORMED_REQUEST;
  const body = JSON.stringify(problem(code, detail));
  const { status, title } = PROBLEM_CATALOG[code];
  socket.end(
    `HTTP/1.1 ${status} ${title}\r\ncontent-type: ${PROBLEM_CONTENT_TYPE}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
