/**
 * @notify/contract: the Kafka message contract v1 of the notify delivery service.
 *
 * Topics (the prefix is the service's NOTIFY_TOPIC_PREFIX, `notify` by default):
 * - `<prefix>.requests`       `DeliveryRequestV1`: attempt this notification now
 * - `<prefix>.requests.high`  `DeliveryRequestV1` of a `priority: "high"` notification (its own lane)
 * - `<prefix>.retry.<tier>`   `DeliveryRequestV1` with a later `due_at` (delay topics)
 * - `<prefix>.events`         `StatusEventV1`: every state change
 * - `<prefix>.dlq`            the original bytes of an unusable message, with `dlq-*` headers
 *
 * The JSON Schemas (`@notify/contract/schemas/*`) and the AsyncAPI document
 * (`@notify/contract/asyncapi.yaml`) describe the same contract; tests keep them in agreement
 * with the code. This module depends on nothing but Node's `node:crypto`.
 *
 * @packageDocumentation
 */

// Version, topics, headers, keys
export { CONTRACT_VERSION } from './version.js';
export { TOPICS, topicName } from './topics.js';
export { HEADERS } from './headers.js';
export { messageKey } from './message-key.js';

// The contract's enums, frozen for v1
export {
  CHANNELS,
  NOTIFICATION_STATES,
  DEAD_REASONS,
  STATUS_EVENT_TYPES,
  type Channel,
  type NotificationState,
  type DeadReason,
  type StatusEventType,
} from './enums.js';

// Message values
export type { DeliveryRequestV1, StatusEventV1, ParseFailure, ParseResult } from './messages.js';
export { parseDeliveryRequest, parseStatusEvent } from './parse.js';
export { serializeDeliveryRequest, serializeStatusEvent } from './serialize.js';

// Whole records, as the outbox stores them
export {
  buildDeliveryRequest,
  buildStatusEvent,
  type ContractMessage,
  type OutboxMessage,
  type MessageSubject,
  type StatusEventFields,
} from './builders.js';

// JSON Schemas
export { CONTRACT_SCHEMA_NAMES, contractJsonSchemas, type ContractSchemaName } from './json-schemas.js';
