/**
 * Kafka header names. Every value is a UTF-8 string. Consumers ignore headers they do not know:
 * adding a header is not a new contract version.
 */
export const HEADERS = Object.freeze({
  /** The notification id (`ntf_` + ULID). On every message about a notification. */
  notificationId: 'notification-id',
  /** The tenant. On every message about a notification. */
  tenantId: 'tenant-id',
  /** On requests and retries: the attempt the message asks for, a decimal integer ≥ 1. */
  attempt: 'attempt',
  /** ISO 8601 instant before which the message must not be delivered. Never the record timestamp (Kafka 4 rejects timestamps > 1 h ahead). */
  dueAt: 'due-at',
  /** W3C trace context, when the request that created the notification had one. */
  traceparent: 'traceparent',
  /** The contract version, `"1"`. */
  schemaVersion: 'schema-version',
  /** The value's `type`, so a consumer can route without parsing the value. */
  messageType: 'message-type',
  /** On `<prefix>.dlq`: why the message was dead-lettered (at most 500 characters). */
  dlqReason: 'dlq-reason',
  /** On `<prefix>.dlq`: the full topic the message was read from. */
  dlqSourceTopic: 'dlq-source-topic',
  /** On `<prefix>.dlq`: the partition it was read from, a decimal integer. */
  dlqSourcePartition: 'dlq-source-partition',
  /** On `<prefix>.dlq`: its offset in that partition, a decimal integer. */
  dlqSourceOffset: 'dlq-source-offset',
} as const);
