/** One message as the relay hands it to a `Publisher`: the full topic name and the outbox row's bytes. */
export interface PublishMessage {
  /** Full topic name (prefix included). */
  readonly topic: string;
  readonly key: string;
  readonly value: string;
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * The port through which the relay writes messages to the broker.
 *
 * Guarantees an implementation must give:
 * - **Durable on resolve.** `publish` resolves only when every message of the call is
 *   acknowledged by all in-sync replicas.
 * - **Not atomic.** A rejected call may have written any subset of its messages (partitions
 *   fail independently). The caller republishes the whole batch, so delivery is at-least-once.
 * - **Ordered within a key.** Messages of one topic and key are written in array order, and
 *   after every message of a call that resolved before this call started. Messages of a call
 *   that rejected may still land (a duplicate when the caller republishes them).
 * - **Safe for concurrent callers.** Calls are serialized internally, in call order; throughput
 *   comes from large batches, not from concurrency.
 */
export interface Publisher {
  /** Writes `messages` (see the guarantees above). Rejects with a `PublishError`. */
  publish(messages: readonly PublishMessage[]): Promise<void>;
  /** Releases connections. Pending calls settle first; later calls reject. */
  close(): Promise<void>;
}

/** Stable codes of `PublishError`. */
export const PUBLISH_ERROR_CODES = ['publish_failed', 'publish_timeout', 'publisher_closed'] as const;
/** A `PublishError` code. */
export type PublishErrorCode = (typeof PUBLISH_ERROR_CODES)[number];

/** A publish did not complete; the cause is the broker client's error. The batch must be retried. */
export class PublishError extends Error {
  readonly code: PublishErrorCode;
  /** The client's own verdict (kafkajs `retriable`); the relay retries either way, with backoff. */
  readonly retriable: boolean;
  constructor(code: PublishErrorCode, message: string, options: { cause?: unknown; retriable?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.name = 'PublishError';
    this.code = code;
    this.retriable = options.retriable ?? true;
  }
}
