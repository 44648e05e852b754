// Test helpers of @notify/relay: in-memory publishers for pure unit tests of code that takes a
// `Publisher`. Integration tests use the real Kafka publisher.
import { PublishError, type PublishMessage, type Publisher } from '../publisher.js';

/** A `Publisher` that keeps what it was given, and can be told to fail. */
export interface MemoryPublisher extends Publisher {
  /** Every message published so far, in order. */
  readonly messages: PublishMessage[];
  /** While set, every `publish` rejects with a `PublishError` carrying this message. */
  failWith: string | null;
}

/** Creates a `MemoryPublisher`. */
export function createMemoryPublisher(): MemoryPublisher {
  const pub: MemoryPublisher = {
    messages: [],
    failWith: null,
    async publish(messages) {
      if (pub.failWith !== null) throw new PublishError('publish_failed', pub.failWith);
      pub.messages.push(...messages);
    },
    async close() {},
  };
  return pub;
}

/** A `Publisher` that forwards to whichever publisher `target` points at (tests switch a broken one for a working one). */
export interface SwitchablePublisher extends Publisher {
  target: Publisher;
}

/** Creates a `SwitchablePublisher` starting at `target`. `close` closes nothing: the caller owns the targets. */
export function createSwitchablePublisher(target: Publisher): SwitchablePublisher {
  const pub: SwitchablePublisher = {
    target,
    publish: (messages) => pub.target.publish(messages),
    async close() {},
  };
  return pub;
}
