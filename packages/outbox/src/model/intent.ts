/**
 * What a domain service asks for: the fields of the API's request body (snake_case), plus who asks
 * and how to dedupe. This is the JSON that `enqueue()` hands to PostgreSQL's
 * `notify_enqueue_row` and that other languages pass to `notify_enqueue(intent jsonb)`.
 *
 * The rules live in one place, the database (migration 0006, docs/sql-enqueue.md): unknown fields
 * and wrong JSON types are refused, lengths are counted in UTF-16 code units, and the content
 * (subject + body + data + metadata) may take at most 64 KiB. The types below only say what a
 * well-formed intent looks like; a refused one comes back as a `ValidationError`.
 */
export interface NotificationIntent {
  /** The tenant the notification belongs to: 1 to 200 characters. */
  readonly tenant_id: string;
  /** Delivery channel: `email`, `sms` or `webhook` (anything else: `unknown_channel`). */
  readonly channel: string;
  /** An email address, an E.164 phone number (`+14155550100`) or an absolute http(s) webhook URL; at most 2048 characters. */
  readonly to: string;
  /** Email subject, email channel only; at most 998 characters. */
  readonly subject?: string | undefined;
  /** The message body (non-empty). Give exactly one of `body` or `template`. */
  readonly body?: string | undefined;
  /** A template name (1 to 200 characters), rendered at send time. */
  readonly template?: string | undefined;
  /** Pin a template version (1 to 2147483647), only with `template`; default: the newest at send time. */
  readonly template_version?: number | undefined;
  /** Template variables, or the webhook payload data: a JSON object nested at most 32 levels deep. */
  readonly data?: Readonly<Record<string, unknown>> | undefined;
  /** Category matched against recipient opt-outs: 1 to 100 characters. */
  readonly category?: string | undefined;
  /** Give up after this instant: ISO 8601 with seconds and `Z` or an offset, in the future. Not with `ttl_seconds`. */
  readonly expires_at?: string | undefined;
  /** Give up this many seconds after creation (1 to 2592000, 30 days). Neither given: the service's default expiry. */
  readonly ttl_seconds?: number | undefined;
  /** Your own labels (keys up to 100, values up to 1000 characters), returned as given. */
  readonly metadata?: Readonly<Record<string, string>> | undefined;
  /** With a key, `(tenant_id, idempotency_key)` returns the original notification on repeat: 1 to 255 characters. */
  readonly idempotency_key?: string | undefined;
  /**
   * Deliver no earlier than this instant: ISO 8601 with seconds and `Z` or an offset, at most 30
   * days ahead (a past instant sends at once). Until then the notification is `queued` with
   * `next_attempt_at` = `send_at` and can be cancelled. An expiry given as `ttl_seconds` (or the
   * default) counts from `send_at`; an `expires_at` must be after it.
   */
  readonly send_at?: string | undefined;
  /**
   * `high`: the first attempt goes to `requests.high`, which the dispatcher drains in a lane of its
   * own, so a backlog of `normal` ones (the default) never delays it. For codes and alerts, not campaigns.
   */
  readonly priority?: 'high' | 'normal' | undefined;
  /**
   * `strict`: not attempted while an earlier notification of the same tenant, channel and
   * recipient is still queued, even one waiting for a retry (a dead or cancelled one releases it).
   * `relaxed` (default): first attempts start in enqueue order; a retry can be overtaken.
   */
  readonly ordering?: 'strict' | 'relaxed' | undefined;
  /** W3C trace context to carry through Kafka into the dispatcher; kept only when well-formed, otherwise dropped. */
  readonly traceparent?: string | undefined;
}
