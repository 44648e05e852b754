import { z } from 'zod';
import { CHANNELS, DEAD_REASONS } from '@notify/outbox';
import { PageSize } from './schemas.js';

// The shapes of the management routes (templates, opt-outs, webhook secret): /openapi.json is
// generated from them and the tests parse responses with them.

const instant = z.iso.datetime({ offset: true });
const templateName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[\w.:-]+$/, 'letters, digits, "_", ".", ":" or "-"');

/** Body of `POST /v1/templates`: a new version of the named template (version 1 when the name is new). */
export const TemplateCreate = z
  .object({
    name: templateName.describe('Template name; notifications refer to it'),
    channel: z.enum(CHANNELS),
    subject: z.string().min(1).max(998).optional().describe('Email only; may use variables'),
    body: z.string().min(1).max(65_536).describe('Text with {{variable}} tags'),
    html_body: z.string().min(1).max(262_144).optional().describe('Email only: the HTML alternative (values HTML-escaped)'),
    sample_data: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('Checked at create time: a variable it lacks is refused (422 with its position); the preview default'),
    activate: z
      .boolean()
      .optional()
      .describe('Make this version the active one at once (default: false; without any activation the newest renders)'),
  })
  .strict();
export type TemplateCreate = z.infer<typeof TemplateCreate>;

/** One stored template version. */
export const TemplateVersion = z
  .object({
    name: z.string(),
    version: z.int().min(1),
    channel: z.enum(CHANNELS),
    subject: z.string().nullable(),
    body: z.string(),
    html_body: z.string().nullable(),
    sample_data: z.record(z.string(), z.unknown()).nullable(),
    active: z.boolean().describe('The version unpinned notifications render'),
    created_at: instant,
  })
  .strict();
export type TemplateVersion = z.infer<typeof TemplateVersion>;

/** A template name with its versions, newest first. */
const TemplateSummary = z
  .object({
    name: z.string(),
    channel: z.enum(CHANNELS),
    latest_version: z.int().min(1),
    active_version: z.int().min(1).nullable().describe('Set by PUT /v1/templates/{name}/active; null: the newest renders'),
    versions: z.int().min(1),
    updated_at: instant,
  })
  .strict();

/** `GET /v1/templates`. */
export const TemplateSummaryList = z.object({ data: z.array(TemplateSummary) }).strict();
/** `GET /v1/templates/{name}`: every version, newest first. */
export const TemplateVersionList = z.object({ data: z.array(TemplateVersion) }).strict();

/** Body of `PUT /v1/templates/{name}/active`. */
export const TemplateActivate = z.object({ version: z.int().min(1) }).strict();

/** Body of `POST /v1/templates/{name}/preview`. */
export const TemplatePreviewRequest = z
  .object({
    version: z.int().min(1).optional().describe('Default: the version unpinned notifications render'),
    data: z.record(z.string(), z.unknown()).optional().describe("Default: the version's sample_data"),
  })
  .strict();

/** A rendered template. */
export const TemplatePreview = z
  .object({
    name: z.string(),
    version: z.int().min(1),
    subject: z.string().nullable(),
    body: z.string(),
    html_body: z.string().nullable(),
  })
  .strict();
export type TemplatePreview = z.infer<typeof TemplatePreview>;

/** Body of `POST /v1/suppressions`. */
export const SuppressionCreate = z
  .object({
    channel: z.enum(CHANNELS),
    to: z.string().min(1).max(2048).describe('The recipient (email addresses are compared lower-cased)'),
    category: z.string().min(1).max(100).optional().describe('One category; omitted or "*": every category'),
    reason: z.string().max(500).optional(),
  })
  .strict();
export type SuppressionCreate = z.infer<typeof SuppressionCreate>;

/** One opt-out. */
export const SuppressionView = z
  .object({
    channel: z.enum(CHANNELS),
    to: z.string(),
    category: z.string().describe('"*" for every category'),
    reason: z.string().nullable(),
    created_at: instant,
  })
  .strict();
export type SuppressionView = z.infer<typeof SuppressionView>;

/** A page of opt-outs. */
export const SuppressionList = z
  .object({
    data: z.array(SuppressionView),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last'),
  })
  .strict();

/** Query of `GET /v1/suppressions`. */
export const SuppressionListQuery = z
  .object({
    channel: z.enum(CHANNELS).optional(),
    to: z.string().min(1).max(2048).optional().describe('Only this recipient'),
    limit: PageSize,
    cursor: z.string().min(1).max(4096).optional(),
  })
  .strict();

/** Query of `DELETE /v1/suppressions`. */
export const SuppressionDeleteQuery = z
  .object({
    channel: z.enum(CHANNELS),
    to: z.string().min(1).max(2048),
    category: z.string().min(1).max(100).optional().describe('Omitted: the every-category opt-out ("*")'),
  })
  .strict();

/** One of the tenant's signing secrets, without the secret. */
const WebhookSecretView = z
  .object({
    id: z.string(),
    created_at: instant,
    expires_at: instant.nullable().describe('When it stops signing (end of the grace period); null: the current secret'),
  })
  .strict();

/** `GET /v1/webhook-secret`: the secrets that sign now. */
export const WebhookSecretList = z.object({ data: z.array(WebhookSecretView) }).strict();

/** Longest grace a rotation may give the previous secret: 30 days, as NOTIFY_SECRET_ROTATION_GRACE_MS. */
const MAX_ROTATION_GRACE_SECONDS = 30 * 24 * 3600;

/** Body of `POST /v1/webhook-secret/rotate` (optional: without one, the configured grace applies). */
export const WebhookSecretRotate = z
  .object({
    previous_expires_in_seconds: z
      .int()
      .min(0)
      .max(MAX_ROTATION_GRACE_SECONDS)
      .optional()
      .describe('How long the previous secrets keep signing; 0 ends them now (a leaked secret). Default NOTIFY_SECRET_ROTATION_GRACE_MS'),
  })
  .strict();

/** `POST /v1/webhook-secret/rotate`: the new secret, shown this once. */
export const WebhookSecretRotated = z
  .object({
    id: z.string(),
    secret: z.string().describe('whsec_…: shown only in this response; store it in your receiver now'),
    created_at: instant,
    previous_expires_at: instant
      .nullable()
      .describe(
        'Until then the previous secret signs too; null when there was none (a tenant signed with NOTIFY_WEBHOOK_SECRET keeps it until then, when the API has it)',
      ),
  })
  .strict();
export type WebhookSecretRotated = z.infer<typeof WebhookSecretRotated>;

/** Body of `POST /v1/notifications/retry`. */
export const BulkRetryRequest = z
  .object({
    filter: z
      .object({
        state: z.literal('dead').optional().describe('Only dead notifications are retried'),
        dead_reason: z.enum(DEAD_REASONS).optional(),
        channel: z.enum(CHANNELS).optional(),
        to: z.string().min(1).max(2048).optional().describe('Exact recipient'),
        last_error_prefix: z
          .string()
          .max(200)
          .nullable()
          .optional()
          .describe(
            "The first 200 characters of last_error, exactly (a group of the console's dead page); null: those without a last error",
          ),
        created_from: instant.optional().describe('Created at or after'),
        created_to: instant.optional().describe('Created before'),
      })
      .strict(),
    limit: z.int().min(1).max(10_000).default(10_000).describe('Most notifications to re-queue (oldest first)'),
  })
  .strict();
export type BulkRetryRequest = z.infer<typeof BulkRetryRequest>;

/** A bulk retry and, on GET, where its notifications are now. */
export const BulkRetryView = z
  .object({
    id: z.string().describe('blk_…: follow it at GET /v1/notifications/retries/{id}'),
    requeued: z.int().min(0),
    matched: z.int().min(0).describe('Dead notifications the filter matched (up to limit + 1); more than requeued: run it again'),
    created_at: instant,
    states: z.record(z.string(), z.int()).optional().describe('GET only: the current states of the re-queued notifications'),
  })
  .strict();
export type BulkRetryView = z.infer<typeof BulkRetryView>;
