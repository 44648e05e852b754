import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';
import type { AttemptOutcome, Channel, DeadReason, NotificationState } from '../model/state.js';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type Json<T> = ColumnType<T, string, string>;

/** `notifications`: one row per notification; the source of truth for its state. */
export interface NotificationsTable {
  id: string;
  tenant_id: string;
  channel: Channel;
  recipient: string;
  subject: string | null;
  body: string | null;
  template: string | null;
  template_version: number | null;
  data: Json<Record<string, unknown> | null>;
  category: string | null;
  metadata: Json<Record<string, string>>;
  idempotency_key: string | null;
  request_hash: string | null;
  state: NotificationState;
  dead_reason: DeadReason | null;
  attempts: number;
  max_attempts: number;
  next_attempt_at: Timestamp | null;
  last_error: string | null;
  expires_at: Timestamp;
  traceparent: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
  sent_at: Timestamp | null;
}

/** `attempts`: one row per delivery attempt. */
export interface AttemptsTable {
  notification_id: string;
  attempt: number;
  started_at: Timestamp;
  finished_at: Timestamp;
  outcome: AttemptOutcome;
  error: string | null;
  provider_status: string | null;
}

/** `outbox`: messages waiting for the relay. `id` is a bigint, returned by pg as a string. */
export interface OutboxTable {
  id: ColumnType<string, never, never>;
  topic: string;
  key: string;
  value: string;
  headers: Json<Record<string, string>>;
  created_at: Generated<Timestamp>;
  txid: ColumnType<string, never, never>;
  published_at: Timestamp | null;
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
  created_at: Generated<Timestamp>;
}

/** The whole schema, for `new Kysely<Database>(…)`. */
export interface Database {
  notifications: NotificationsTable;
  attempts: AttemptsTable;
  outbox: OutboxTable;
  api_keys: ApiKeysTable;
  templates: TemplatesTable;
  suppressions: SuppressionsTable;
  tenants: TenantsTable;
}

/** A notification row as read. */
export type Notification = Selectable<NotificationsTable>;
/** An attempt row as read. */
export type Attempt = Selectable<AttemptsTable>;
/** An outbox row as read. */
export type OutboxRow = Selectable<OutboxTable>;
/** An attempt row as written. */
export type NewAttempt = Insertable<AttemptsTable>;
