import { createHash } from 'node:crypto';
import { z } from 'zod';
import { CHANNELS, DEAD_REASONS, NOTIFICATION_STATES } from '../model/state.js';

/**
 * The Kafka message contract, version 1. Other teams consume these topics: change nothing here
 * without a new version. Documented in docs/message-contract.md; the JSON Schemas in
 * contract/schemas/ are generated from the zod schemas below and checked by a test.
 *
 * Topics (the prefix is NOTIFY_TOPIC_PREFIX):
 * - `<prefix>.requests`       DeliveryRequest v1: "attempt this notification now"
 * - `<prefix>.retry.<tier>`   DeliveryRequest v1 with a later `due_at` (delay topics)
 * - `<prefix>.events`         StatusEvent v1: every state change
 * - `<prefix>.dlq`            the original bytes of an unusable message, with `dlq-*` headers
 */
export const CONTRACT_VERSION = 1 as const;

/** Header names. Values are UTF-8 strings. */
export const HEADERS = {
  notificationId: 'notification-id',
  tenantId: 'tenant-id',
  attempt: 'attempt',
  /** ISO 8601 instant before which the message must not be delivered. Never the record timestamp (Kafka 4 rejects timestamps > 1 h ahead). */
  dueAt: 'due-at',
  traceparent: 'traceparent',
  schemaVersion: 'schema-version',
  messageType: 'message-type',
  /** On `<prefix>.dlq`: why the message was dead-lettered, and where it came from. */
  dlqReason: 'dlq-reason',
  dlqSourceTopic: 'dlq-source-topic',
  dlqSourcePartition: 'dlq-source-partition',
  dlqSourceOffset: 'dlq-source-offset',
} as const;

/** Topic suffixes (the outbox stores these; the relay adds the prefix). */
export const TOPICS = {
  requests: 'requests',
  events: 'events',
  dlq: 'dlq',
  /** `retry.<tier>`, e.g. `retry.5s`. Tiers are defined by the dispatcher's delay-topic config. */
  retry: (tier: string) => `retry.${tier}`,
} as const;

/** The full Kafka topic name for a suffix. */
export function topicName(prefix: string, suffix: string): string {
  return `${prefix}.${suffix}`;
}

/**
 * The Kafka key of every message about a notification: `tenant/channel/<hash of recipient>`.
 * One recipient's messages share a key, so they keep their order on one partition; the
 * recipient itself (an address, a phone number) is hashed so it does not sit in Kafka keys.
 */
export function messageKey(tenantId: string, channel: string, recipient: string): string {
  const digest = createHash('sha256').update(recipient).digest('base64url').slice(0, 22);
  return `${tenantId}/${channel}/${digest}`;
}

const isoInstant = z.iso.datetime({ offset: true });

/** `<prefix>.requests` and `<prefix>.retry.*`: a request to make attempt number `attempt`. */
export const DeliveryRequestV1 = z
  .object({
    v: z.literal(1),
    type: z.literal('notification.deliver'),
    id: z.string().min(1).max(64),
    tenant_id: z.string().min(1).max(200),
    channel: z.enum(CHANNELS),
    /** The attempt this message asks for (1 for the first). A message whose attempt is already done is skipped. */
    attempt: z.int().min(1),
    /** Not before this instant. */
    due_at: isoInstant,
  })
  .strict();
export type DeliveryRequestV1 = z.infer<typeof DeliveryRequestV1>;

/** Status event types: one per transition. */
export const STATUS_EVENT_TYPES = [
  'notification.queued',
  'notification.retry_scheduled',
  'notification.sent',
  'notification.dead',
  'notification.cancelled',
  'notification.requeued',
] as const;
export type StatusEventType = (typeof STATUS_EVENT_TYPES)[number];

/** `<prefix>.events`: a state change, for other teams to react to without polling. No bodies, no recipients. */
export const StatusEventV1 = z
  .object({
    v: z.literal(1),
    type: z.enum(STATUS_EVENT_TYPES),
    id: z.string().min(1).max(64),
    tenant_id: z.string().min(1).max(200),
    channel: z.enum(CHANNELS),
    state: z.enum(NOTIFICATION_STATES),
    attempts: z.int().min(0),
    dead_reason: z.enum(DEAD_REASONS).nullable(),
    last_error: z.string().nullable(),
    next_attempt_at: isoInstant.nullable(),
    occurred_at: isoInstant,
  })
  .strict();
export type StatusEventV1 = z.infer<typeof StatusEventV1>;

/** A message as the outbox stores it and the relay publishes it. */
export interface OutboxMessage {
  /** Topic suffix, see `TOPICS`. */
  readonly topic: string;
  readonly key: string;
  /** The exact bytes to publish (JSON text). */
  readonly value: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** What every message about a notification needs. */
export interface MessageSubject {
  readonly id: string;
  readonly tenant_id: string;
  readonly channel: DeliveryRequestV1['channel'];
  readonly recipient: string;
  readonly traceparent?: string | null;
}

function baseHeaders(n: MessageSubject, type: string): Record<string, string> {
  const headers: Record<string, string> = {
    [HEADERS.notificationId]: n.id,
    [HEADERS.tenantId]: n.tenant_id,
    [HEADERS.schemaVersion]: String(CONTRACT_VERSION),
    [HEADERS.messageType]: type,
  };
  if (n.traceparent) headers[HEADERS.traceparent] = n.traceparent;
  return headers;
}

/** The outbox message asking for attempt `attempt` at `dueAt`, on `requests` (attempt 1) or a retry tier topic. */
export function buildDeliveryRequest(
  n: MessageSubject,
  attempt: number,
  dueAt: Date,
  topic: string = TOPICS.requests,
): OutboxMessage {
  const message: DeliveryRequestV1 = {
    v: 1,
    type: 'notification.deliver',
    id: n.id,
    tenant_id: n.tenant_id,
    channel: n.channel,
    attempt,
    due_at: dueAt.toISOString(),
  };
  return {
    topic,
    key: messageKey(n.tenant_id, n.channel, n.recipient),
    value: JSON.stringify(message),
    headers: {
      ...baseHeaders(n, message.type),
      [HEADERS.attempt]: String(attempt),
      [HEADERS.dueAt]: message.due_at,
    },
  };
}

/** The fields of a status event that vary. */
export interface StatusEventFields {
  readonly type: StatusEventType;
  readonly state: StatusEventV1['state'];
  readonly attempts: number;
  readonly dead_reason?: StatusEventV1['dead_reason'];
  readonly last_error?: string | null;
  readonly next_attempt_at?: Date | null;
  readonly occurred_at: Date;
}

/** The outbox message announcing a state change on `events`. */
export function buildStatusEvent(n: MessageSubject, fields: StatusEventFields): OutboxMessage {
  const message: StatusEventV1 = {
    v: 1,
    type: fields.type,
    id: n.id,
    tenant_id: n.tenant_id,
    channel: n.channel,
    state: fields.state,
    attempts: fields.attempts,
    dead_reason: fields.dead_reason ?? null,
    last_error: fields.last_error ?? null,
    next_attempt_at: fields.next_attempt_at ? fields.next_attempt_at.toISOString() : null,
    occurred_at: fields.occurred_at.toISOString(),
  };
  return {
    topic: TOPICS.events,
    key: messageKey(n.tenant_id, n.channel, n.recipient),
    value: JSON.stringify(message),
    headers: baseHeaders(n, message.type),
  };
}

/** Why a message could not be used; becomes the `dlq-reason` header. */
export type ParseFailure = { readonly ok: false; readonly reason: string };

/**
 * Parses a delivery request from Kafka bytes. Never throws: a bad message is a `ParseFailure`
 * naming the problem (bad JSON, unknown schema version, wrong shape), for the dead-letter topic.
 */
export function parseDeliveryRequest(
  value: Buffer | string | null | undefined,
): { readonly ok: true; readonly message: DeliveryRequestV1 } | ParseFailure {
  return parseWith(DeliveryRequestV1, value);
}

/** Parses a status event from Kafka bytes; never throws. */
export function parseStatusEvent(
  value: Buffer | string | null | undefined,
): { readonly ok: true; readonly message: StatusEventV1 } | ParseFailure {
  return parseWith(StatusEventV1, value);
}

function parseWith<T>(
  schema: z.ZodType<T>,
  value: Buffer | string | null | undefined,
): { readonly ok: true; readonly message: T } | ParseFailure {
  if (value === null || value === undefined) return { ok: false, reason: 'empty message (tombstone)' };
  let json: unknown;
  try {
    json = JSON.parse(typeof value === 'string' ? value : value.toString('utf8'));
  } catch {
    return { ok: false, reason: 'value is not valid JSON' };
  }
  if (typeof json !== 'object' || json === null || !('v' in json)) {
    return { ok: false, reason: 'no schema version field "v"' };
  }
  if ((json as { v: unknown }).v !== CONTRACT_VERSION) {
    return { ok: false, reason: `unknown schema version ${JSON.stringify((json as { v: unknown }).v)}` };
  }
  const result = schema.safeParse(json);
  if (!result.success) {
    const issue = result.error.issues[0];
    return { ok: false, reason: `invalid message: ${issue ? `${issue.path.join('.') || '(root)'}: ${issue.message}` : 'unknown'}` };
  }
  return { ok: true, message: result.data };
}
