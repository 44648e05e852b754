import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { AttemptOutcome, Channel, OutboxDatabase } from '@notify/outbox';

// The Kysely types of the whole schema that migrations/sql creates. The tables `enqueue` writes
// (notifications, outbox) are typed in @notify/outbox, which a domain service installs alone.

type Timestamp = ColumnType<Date, Date | string, Date | string>;

/** `attempts`: one row per delivery attempt. */
export interface AttemptsTable {
  notification_id: string;
  attempt: number;
  started_at: Timestamp;
  finished_at: Timestamp;
  outcome: AttemptOutcome;
  error: string | null;
  provider_status: string | null;
  /** Which provider answered (0090): primary, the channel's fallback, or null when none was called. */
  provider: 'primary' | 'fallback' | null;
}

/** `api_keys`: hashed API keys per tenant. */
export interface ApiKeysTable {
  id: string;
  tenant_id: string;
  key_hash: string;
  name: string | null;
  created_at: Generated<Timestamp>;
  revoked_at: Timestamp | null;
}

/** `templates`: versioned templates per tenant. */
export interface TemplatesTable {
  tenant_id: string;
  name: string;
  version: number;
  channel: Channel;
  subject: string | null;
  body: string;
  /** Email only: the HTML alternative, HTML-escaped at render time (migration 0004). */
  html_body: string | null;
  created_at: Generated<Timestamp>;
  /** The data it was checked against at create time; the preview's default (migration 0030). */
  sample_data: unknown;
}

/** `template_activations`: the version an unpinned notification renders (migration 0030); none = the newest. */
export interface TemplateActivationsTable {
  tenant_id: string;
  name: string;
  version: number;
  activated_at: Timestamp;
}

/** `tenant_webhook_secrets`: sealed (AES-256-GCM) signing secrets; those not expired sign (migration 0030). */
export interface TenantWebhookSecretsTable {
  id: Generated<string>;
  tenant_id: string;
  sealed: string;
  created_at: Timestamp;
  expires_at: Timestamp | null;
}

/** `bulk_retries`: one row per POST /v1/notifications/retry (migration 0030). */
export interface BulkRetriesTable {
  id: string;
  tenant_id: string;
  idempotency_key: string | null;
  filter: unknown;
  requeued: number;
  matched: number;
  api_key_id: string | null;
  created_at: Timestamp;
}

/** `suppressions`: recipient opt-outs by channel and category ('*' = all). */
export interface SuppressionsTable {
  tenant_id: string;
  channel: Channel;
  recipient: string;
  category: Generated<string>;
  reason: string | null;
  created_at: Generated<Timestamp>;
}

/** `tenants`: per-tenant settings. */
export interface TenantsTable {
  id: string;
  webhook_signing_secret: string | null;
  /** Override of NOTIFY_TENANT_RATE_LIMIT (0090), same format; null = the default. */
  delivery_rate_limit: Generated<string | null>;
  created_at: Generated<Timestamp>;
}

/** `dlq_redrives`: dead letters `notify dlq redrive` re-published, by DLQ position (migration 0080). */
interface DlqRedrivesTable {
  dlq_topic: string;
  dlq_partition: number;
  dlq_offset: string;
  target_topic: string;
  notification_id: string | null;
  redrive_count: Generated<number>;
  redriven_at: Timestamp;
}

/** `endpoints` (0090): health of what a tenant's deliveries go to (docs/endpoints.md). */
export interface EndpointsTable {
  id: string;
  tenant_id: string;
  channel: Channel;
  origin: string;
  provider: Generated<'primary' | 'fallback'>;
  state: Generated<'ok' | 'open' | 'disabled'>;
  consecutive_failures: Generated<number>;
  failing_since: Timestamp | null;
  last_error_code: string | null;
  last_failure_at: Timestamp | null;
  last_success_at: Timestamp | null;
  opened_at: Timestamp | null;
  probe_at: Timestamp | null;
  disabled_at: Timestamp | null;
  disabled_by: 'auto' | 'operator' | null;
  rate_limit: string | null;
  /** 0200: recent answers and transient failures, decaying with a 10 s time constant, as of `health_at`. */
  health_attempts: Generated<number>;
  health_failures: Generated<number>;
  health_at: Timestamp | null;
  created_at: Generated<Timestamp>;
  updated_at: Generated<Timestamp>;
}

/**
 * The `outbox_messages` view (migration 0150), read-only: one row per Kafka message the outbox
 * holds, a row's own (`part` 0) and the `notification.queued` event an enqueue's request row
 * carries (`part` 1). Order a key's messages by (txid, id, part), as the relay publishes them.
 */
export interface OutboxMessagesView {
  id: ColumnType<string, never, never>;
  part: ColumnType<number, never, never>;
  topic: ColumnType<string, never, never>;
  key: ColumnType<string, never, never>;
  value: ColumnType<string, never, never>;
  headers: ColumnType<Record<string, string>, never, never>;
  created_at: ColumnType<Date, never, never>;
  txid: ColumnType<string, never, never>;
  published_at: ColumnType<Date | null, never, never>;
}

/**
 * `outbox_published` (migration 0280): the relay's record of each published delivery request,
 * which the dispatcher's repair sweep reads; the relay's retention purge deletes it.
 */
interface OutboxPublishedTable {
  outbox_id: string;
  notification_id: string | null;
  topic: string;
  key: string;
  published_at: Timestamp;
}

/** The whole schema, for `new Kysely<Database>(…)`. */
export interface Database extends OutboxDatabase {
  attempts: AttemptsTable;
  api_keys: ApiKeysTable;
  templates: TemplatesTable;
  suppressions: SuppressionsTable;
  tenants: TenantsTable;
  template_activations: TemplateActivationsTable;
  tenant_webhook_secrets: TenantWebhookSecretsTable;
  bulk_retries: BulkRetriesTable;
  dlq_redrives: DlqRedrivesTable;
  endpoints: EndpointsTable;
  outbox_messages: OutboxMessagesView;
  outbox_published: OutboxPublishedTable;
}

/** An attempt row as read. */
export type Attempt = Selectable<AttemptsTable>;
/** An attempt row as written. */
export type NewAttempt = Insertable<AttemptsTable>;
