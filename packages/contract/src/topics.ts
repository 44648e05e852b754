/**
 * Topic suffixes; the full name is `<prefix>.<suffix>` (see `topicName`), where the prefix is the
 * service's `NOTIFY_TOPIC_PREFIX` (default `notify`). The outbox stores suffixes; the relay adds
 * the prefix.
 */
export const TOPICS = Object.freeze({
  /** `DeliveryRequestV1`: attempt this notification now. */
  requests: 'requests',
  /** `DeliveryRequestV1` of a `priority: "high"` notification (its first attempt): a lane the dispatcher drains apart from `requests`. */
  requestsHigh: 'requests.high',
  /** `StatusEventV1`: one per state change. */
  events: 'events',
  /** The original bytes of a message that could not be used, with `dlq-*` headers. */
  dlq: 'dlq',
  /** `retry.<tier>`, e.g. `retry.5s`: `DeliveryRequestV1` with a later `due_at`. Tiers come from the dispatcher's retry config. */
  retry: (tier: string): string => `retry.${tier}`,
} as const);

/** The full Kafka topic name: `topicName('notify', TOPICS.events)` is `notify.events`. */
export function topicName(prefix: string, suffix: string): string {
  return `${prefix}.${suffix}`;
}
