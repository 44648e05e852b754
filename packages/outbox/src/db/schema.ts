import type { Channel, DeadReason, NotificationState } from '../model/state.js';

// Kysely's column types, spelled out rather than imported: Kysely reads a column's select, insert
// and update types from these three properties (its own ColumnType, Generated and Selectable, in
// 0.27 and 0.28), so `Kysely<OutboxDatabase>` types queries exactly as with its own, and a project
// that enqueues with a `pg` client type-checks without kysely installed (an optional peer).
// test/packaging holds both: a Kysely consumer and a pg-only one, type-checked from the tarball.
interface ColumnType<S, I = S, U = S> {
  readonly __select__: S;
  readonly __insert__: I;
  readonly __update__: U;
}
type Generated<S> = ColumnType<S, S | undefined, S>;
/** A column's type as read (distributes over a union: `Timestamp | null` reads as `Date | null`). */
type SelectType<T> = T extends ColumnType<infer S, unknown, unknown> ? S : T;
/** The row as read. */
type Selectable<R> = { [K in keyof R]: SelectType<R[K]> };

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
  /** The intent's `send_at` as given (migration 0040); null: send at once. */
  send_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** Scheduled and not yet handed to Kafka: the dispatcher's schedule service releases it near this instant. */
  held_until: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  /** `normal` or `high` (the `requests.high` topic). */
  priority: ColumnType<NotificationPriority, NotificationPriority | undefined, NotificationPriority>;
  /** `relaxed` (first attempts in order) or `strict` (not attempted while an earlier one to the same recipient is queued). */
  ordering: ColumnType<NotificationOrdering, NotificationOrdering | undefined, NotificationOrdering>;
}

/** Delivery priority of a notification. */
export type NotificationPriority = 'normal' | 'high';
/** Ordering mode of a notification. */
export type NotificationOrdering = 'relaxed' | 'strict';

/** `outbox`: messages waiting for the relay. `id` is a bigint, returned by pg as a string. */
export interface OutboxTable {
  id: ColumnType<string, never, never>;
  topic: string;
  key: string;
  value: string;
  headers: Json<Record<string, string>>;
  created_at: Generated<Timestamp>;
  txid: ColumnType<string, never, never>;
  /**
   * Set only by relays before migration 0280, which marked a published row instead of deleting it.
   * A published row now leaves the outbox (a delivery request leaves a record in `outbox_published`).
   */
  published_at: Timestamp | null;
  /** The `notification.queued` event the relay publishes right after this row (an enqueue's request row; migration 0150). */
  event_value: ColumnType<string | null, string | null | undefined, string | null>;
}

/** The tables `enqueue` writes, for `Kysely<OutboxDatabase>` (your own database type may extend it). */
export interface OutboxDatabase {
  notifications: NotificationsTable;
  outbox: OutboxTable;
}

/** A notification row as read. */
export type Notification = Selectable<NotificationsTable>;
/** An outbox row as read. */
export type OutboxRow = Selectable<OutboxTable>;
