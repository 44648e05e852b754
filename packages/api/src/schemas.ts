import { z } from 'zod';
import { ATTEMPT_OUTCOMES, CHANNELS, DEAD_REASONS, NOTIFICATION_STATES } from '@notify/outbox';
import { NOTIFICATION_ACTIONS } from './sql/notification-action-list.js';

// The schemas below are the single source of the API's documented shapes: /openapi.json is
// generated from them, tests parse responses with them, and ListQuery validates the list's query
// string. A notification request is validated once, by PostgreSQL's notify_enqueue_row (migration
// 0006), the same rules every enqueuer meets; NotificationRequest documents it, and a test checks
// that the two accept the same fields.

const instant = z.iso.datetime({ offset: true });

/** The body of `POST /v1/notifications`: the intent without `tenant_id` (the API key's tenant). */
export const NotificationRequest = z
  .object({
    channel: z.string().min(1).describe('Delivery channel: email, sms or webhook'),
    to: z.string().min(1).max(2048).describe('Email address, E.164 phone number or webhook URL'),
    subject: z.string().max(998).optional().describe('Email subject (email only)'),
    body: z.string().min(1).optional().describe('Message body; give body or template'),
    template: z.string().min(1).max(200).optional().describe('Template name, rendered at send time'),
    template_version: z.int().min(1).max(2_147_483_647).optional().describe('Pin a template version; default: newest at send time'),
    data: z.record(z.string(), z.unknown()).optional().describe('Template variables, or the webhook payload data'),
    category: z.string().min(1).max(100).optional().describe('Category matched against recipient opt-outs'),
    expires_at: z.iso.datetime({ offset: true }).optional().describe('Give up after this instant (ISO 8601)'),
    ttl_seconds: z
      .int()
      .min(1)
      .max(30 * 86_400)
      .optional()
      .describe('Give up this many seconds after creation'),
    metadata: z.record(z.string().max(100), z.string().max(1000)).optional().describe('Your own labels, returned as given'),
    send_at: instant
      .optional()
      .describe(
        'Deliver no earlier than this instant (ISO 8601, at most 30 days ahead; a past instant sends at once). Cancel works until then',
      ),
    priority: z
      .enum(['high', 'normal'])
      .optional()
      .describe('high: delivered in a lane of its own, never behind a backlog of normal ones (default normal)'),
    ordering: z
      .enum(['strict', 'relaxed'])
      .optional()
      .describe(
        'strict: not attempted while an earlier notification to the same recipient is queued, even one waiting for a retry. relaxed (default): first attempts in order; a retry can be overtaken',
      ),
  })
  .strict()
  .describe('subject + body + data + metadata may take at most 64 KiB; see docs/sql-enqueue.md for every rule');
export type NotificationRequest = z.infer<typeof NotificationRequest>;

/** Most items of `POST /v1/notifications/batch`. */
export const MAX_BATCH_ITEMS = 1000;

/** One item of a batch: a notification request, with its own idempotency key. */
const BatchItemRequest = NotificationRequest.extend({
  idempotency_key: z
    .string()
    .min(1)
    .max(255)
    .regex(/^[\x20-\x7e]+$/)
    .optional()
    .describe("This item's Idempotency-Key: 1 to 255 printable ASCII characters, as the header"),
}).describe('A notification request; idempotency_key plays the Idempotency-Key header for this item');

/** The body of `POST /v1/notifications/batch`. */
export const BatchRequest = z
  .object({
    items: z.array(BatchItemRequest).min(1).max(MAX_BATCH_ITEMS),
    atomic: z.boolean().optional().describe('true: one refused item refuses the batch (422 batch_refused, nothing queued). Default false'),
  })
  .strict();
export type BatchRequest = z.infer<typeof BatchRequest>;

/** Largest page of `GET /v1/notifications`. */
export const MAX_PAGE_SIZE = 100;
/** Page size when `limit` is not given. */
export const DEFAULT_PAGE_SIZE = 25;

// One message for every way `limit` can be wrong (zod's own named its internals: "expected int, received number").
const PAGE_SIZE_PROBLEM = `must be a whole number from 1 to ${MAX_PAGE_SIZE}`;

/** `limit` of a list endpoint: 1 to MAX_PAGE_SIZE, DEFAULT_PAGE_SIZE when absent. */
export const PageSize = z.coerce
  .number({ error: PAGE_SIZE_PROBLEM })
  .int({ error: PAGE_SIZE_PROBLEM })
  .min(1, { error: PAGE_SIZE_PROBLEM })
  .max(MAX_PAGE_SIZE, { error: PAGE_SIZE_PROBLEM })
  .default(DEFAULT_PAGE_SIZE)
  .describe('Page size');

/**
 * What is wrong with the dead-group parameters of a notification search (the API's list, the
 * console's search form), by parameter (none: nothing). The last-error ones need `dead_reason`:
 * with it, a search is a range of notifications_tenant_dead_idx, paged by id; without it, a rare
 * error would be looked for through every dead notification of the tenant.
 */
export function deadFilterIssues(q: {
  readonly state?: string | undefined;
  readonly dead_reason?: string | undefined;
  readonly last_error_prefix?: string | undefined;
  readonly has_last_error?: string | undefined;
}): { path: string; message: string }[] {
  const issues: { path: string; message: string }[] = [];
  for (const path of ['last_error_prefix', 'has_last_error'] as const) {
    if (q[path] !== undefined && q.dead_reason === undefined)
      issues.push({ path, message: 'needs a dead reason (dead_reason): it selects among the dead notifications of one reason' });
  }
  if (q.last_error_prefix !== undefined && q.has_last_error === 'false')
    issues.push({ path: 'has_last_error', message: 'false (no last error) contradicts a last error prefix: give one or the other' });
  if (q.dead_reason !== undefined && q.state !== undefined && q.state !== 'dead')
    issues.push({ path: 'state', message: 'must be dead or absent with a dead reason' });
  return issues;
}

/**
 * Query string of `GET /v1/notifications`. Unknown parameters are rejected (a typo should not
 * silently list everything). `dead_reason` with `last_error_prefix` or `has_last_error=false` is one
 * group of the console's dead page; the last-error parameters need `dead_reason`, so that every
 * search by them is a range of the dead notifications' index (docs/api.md, "List").
 */
export const ListQuery = z
  .object({
    state: z.enum(NOTIFICATION_STATES).optional().describe('Only notifications in this state'),
    to: z.string().min(1).max(2048).optional().describe('Only notifications to this exact recipient'),
    dead_reason: z.enum(DEAD_REASONS).optional().describe('Only dead notifications of this reason'),
    last_error_prefix: z
      .string()
      .max(200)
      .optional()
      .describe(
        "With dead_reason: only those whose last_error, cut to its first 200 characters, equals this exactly (a group of the console's dead page)",
      ),
    has_last_error: z
      .enum(['true', 'false'])
      .optional()
      .describe('With dead_reason: only those with (true) or without (false) a last error; false is the group whose error is none'),
    limit: PageSize,
    cursor: z.string().min(1).max(200).optional().describe('`next_cursor` of the previous page'),
  })
  .strict()
  .superRefine((q, ctx) => {
    for (const { path, message } of deadFilterIssues(q)) ctx.addIssue({ code: 'custom', path: [path], message });
  });
export type ListQuery = z.infer<typeof ListQuery>;

/** A notification as the API shows it. Content (body, data) is not echoed back. */
export const NotificationView = z
  .object({
    id: z.string().describe('ntf_ + ULID: time-ordered, not guessable'),
    channel: z.enum(CHANNELS),
    to: z.string(),
    state: z.enum(NOTIFICATION_STATES),
    dead_reason: z.enum(DEAD_REASONS).nullable().describe('Why it is dead; null unless state is dead'),
    attempts: z.int().min(0).describe('Delivery attempts made so far'),
    max_attempts: z.int().min(1).describe('Attempt cap; a manual retry raises it'),
    last_error: z.string().nullable(),
    created_at: instant,
    updated_at: instant,
    next_attempt_at: instant.nullable().describe('When the next attempt is due; null unless queued'),
    sent_at: instant.nullable(),
    expires_at: instant,
    send_at: instant.nullable().describe('The requested send time; null: sent as soon as possible'),
    priority: z.enum(['high', 'normal']),
    ordering: z.enum(['strict', 'relaxed']),
    metadata: z.record(z.string(), z.string()),
  })
  .strict();
export type NotificationView = z.infer<typeof NotificationView>;

/** A page of notifications. */
export const NotificationList = z
  .object({
    data: z.array(NotificationView),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; null on the last page'),
  })
  .strict();
export type NotificationList = z.infer<typeof NotificationList>;

/** One delivery attempt. */
export const AttemptView = z
  .object({
    attempt: z.int().min(1),
    started_at: instant,
    finished_at: instant,
    outcome: z.enum(ATTEMPT_OUTCOMES),
    error: z.string().nullable(),
    provider_status: z.string().nullable().describe('e.g. "503", "550 5.1.1", "ECONNRESET"'),
    provider: z
      .enum(['primary', 'fallback'])
      .nullable()
      .describe("Which provider answered: the channel's primary or its fallback (docs/endpoints.md); null when none was called"),
  })
  .strict();
export type AttemptView = z.infer<typeof AttemptView>;

/** The attempt history. */
export const AttemptList = z.object({ data: z.array(AttemptView) }).strict();
export type AttemptList = z.infer<typeof AttemptList>;

/** One manual action (cancel or retry) on a notification. */
export const ActionView = z
  .object({
    action: z.enum(NOTIFICATION_ACTIONS),
    from_state: z.enum(NOTIFICATION_STATES),
    to_state: z.enum(NOTIFICATION_STATES),
    previous_dead_reason: z.enum(DEAD_REASONS).nullable().describe('Why it was dead before a retry'),
    attempts: z.int().min(0),
    max_attempts: z.int().min(1).describe('The attempt cap after the action'),
    api_key_id: z.string().nullable().describe('The id of the key that asked (never the key); null from the CLI'),
    occurred_at: instant,
  })
  .strict();
export type ActionView = z.infer<typeof ActionView>;

/** The manual-action history. */
export const ActionList = z.object({ data: z.array(ActionView) }).strict();
export type ActionList = z.infer<typeof ActionList>;

/** RFC 9457 problem details, as rendered by this API. */
export const Problem = z
  .object({
    type: z.url().describe('https://notify.dev/problems/<code>'),
    title: z.string(),
    status: z.int(),
    detail: z.string(),
    instance: z.string().optional(),
    code: z.string().describe('The last segment of type'),
    errors: z
      .array(
        z.object({
          path: z.string(),
          message: z.string(),
          offset: z.int().min(0).optional().describe('template_invalid: where in the field (0-based)'),
          line: z.int().min(1).optional(),
          column: z.int().min(1).optional(),
        }),
      )
      .optional()
      .describe('Field issues of a validation problem'),
    existing_id: z.string().optional().describe('On idempotency_conflict: the notification the key belongs to'),
  })
  .loose();
export type Problem = z.infer<typeof Problem>;

/** The result of one batch item, in the batch's order. */
const BatchItemResult = z.union([
  z
    .object({
      status: z.union([z.literal(202), z.literal(200)]).describe('202 queued; 200 the original of a repeated idempotency_key'),
      id: z.string(),
    })
    .strict(),
  z.object({ status: z.int().min(400).max(599), problem: Problem }).strict(),
]);

/** The answer of `POST /v1/notifications/batch`. */
export const BatchResponse = z.object({ items: z.array(BatchItemResult) }).strict();
export type BatchResponse = z.infer<typeof BatchResponse>;

/** /healthz and /readyz. */
export const Health = z
  .object({
    status: z.enum(['ok', 'unavailable']),
    checks: z.record(z.string(), z.enum(['ok', 'unavailable'])).optional(),
  })
  .strict();
export type Health = z.infer<typeof Health>;
