import type { Channel, DeadReason, NotificationState, StatusEventType } from './enums.js';
import { HEADERS } from './headers.js';
import { messageKey } from './message-key.js';
import type { DeliveryRequestV1, StatusEventV1 } from './messages.js';
import { serializeDeliveryRequest, serializeStatusEvent } from './serialize.js';
import { TOPICS } from './topics.js';
import { CONTRACT_VERSION } from './version.js';

/** A whole Kafka record as the outbox stores it and the relay publishes it. */
export interface ContractMessage {
  /** Topic suffix, see `TOPICS`; the relay adds the prefix. */
  readonly topic: string;
  /** See `messageKey`. */
  readonly key: string;
  /** The exact bytes to publish (JSON text). */
  readonly value: string;
  /** See `HEADERS`. */
  readonly headers: Readonly<Record<string, string>>;
}

/** The name the outbox has always used for `ContractMessage`. */
export type OutboxMessage = ContractMessage;

/** What every message about a notification needs. */
export interface MessageSubject {
  readonly id: string;
  readonly tenant_id: string;
  readonly channel: Channel;
  /** Hashed into the key; never written to a value or header. */
  readonly recipient: string;
  /** Copied to the `traceparent` header when non-empty. */
  readonly traceparent?: string | null;
}

/** The fields of a status event that vary. Omitted nullables are written as null. */
export interface StatusEventFields {
  readonly type: StatusEventType;
  readonly state: NotificationState;
  readonly attempts: number;
  readonly dead_reason?: DeadReason | null;
  readonly last_error?: string | null;
  readonly next_attempt_at?: Date | null;
  readonly occurred_at: Date;
}

/**
 * The record asking for attempt `attempt` at `dueAt`: on `requests` by default (attempt 1, the
 * repair sweep, a manual retry), or on a retry tier's topic (`TOPICS.retry(tier)`). Its headers
 * repeat the attempt and due time so a consumer can schedule without parsing the value.
 */
export function buildDeliveryRequest(
  subject: MessageSubject,
  attempt: number,
  dueAt: Date,
  topic: string = TOPICS.requests,
): ContractMessage {
  const message: DeliveryRequestV1 = {
    v: CONTRACT_VERSION,
    type: 'notification.deliver',
    id: subject.id,
    tenant_id: subject.tenant_id,
    channel: subject.channel,
    attempt,
    due_at: dueAt.toISOString(),
  };
  // Added to the base headers in place (the same key order as a spread, which Node 20 makes slow).
  const headers = baseHeaders(subject, message.type);
  headers[HEADERS.attempt] = String(attempt);
  headers[HEADERS.dueAt] = message.due_at;
  return {
    topic,
    key: messageKey(subject.tenant_id, subject.channel, subject.recipient),
    value: serializeDeliveryRequest(message),
    headers,
  };
}

/** The record announcing a state change on `events`. */
export function buildStatusEvent(subject: MessageSubject, fields: StatusEventFields): ContractMessage {
  const message: StatusEventV1 = {
    v: CONTRACT_VERSION,
    type: fields.type,
    id: subject.id,
    tenant_id: subject.tenant_id,
    channel: subject.channel,
    state: fields.state,
    attempts: fields.attempts,
    dead_reason: fields.dead_reason ?? null,
    last_error: fields.last_error ?? null,
    next_attempt_at: fields.next_attempt_at ? fields.next_attempt_at.toISOString() : null,
    occurred_at: fields.occurred_at.toISOString(),
  };
  return {
    topic: TOPICS.events,
    key: messageKey(subject.tenant_id, subject.channel, subject.recipient),
    value: serializeStatusEvent(message),
    headers: baseHeaders(subject, message.type),
  };
}

// The builders write headers in this order (kafkajs writes them in object key order, so the golden
// bytes pin it); on the wire the order is not part of the contract: the relay publishes the headers an
// outbox row stores as jsonb, in PostgreSQL's key order. Consumers read headers by name.
function baseHeaders(subject: MessageSubject, type: string): Record<string, string> {
  const headers: Record<string, string> = {
    [HEADERS.notificationId]: subject.id,
    [HEADERS.tenantId]: subject.tenant_id,
    [HEADERS.schemaVersion]: String(CONTRACT_VERSION),
    [HEADERS.messageType]: type,
  };
  if (subject.traceparent) headers[HEADERS.traceparent] = subject.traceparent;
  return headers;
}
