import type { Channel } from '@notify/outbox';
import type { Delivery, Provider, SendResult } from '@notify/providers';

/** One call a scripted provider received. */
export interface ScriptedCall {
  readonly id: string;
  readonly to: string;
  readonly attempt: number;
}

/** An in-memory provider whose answers a test scripts, for pure unit tests and the lab. It records calls and concurrency. */
export interface ScriptedProvider extends Provider {
  /** Every call, in the order they started. */
  readonly calls: readonly ScriptedCall[];
  /** The `to` of every call answered "sent", in order. */
  readonly delivered: readonly string[];
  /** Calls running now, and the most ever running at once. */
  readonly inFlight: number;
  readonly maxInFlight: number;
}

/**
 * A provider that answers with `respond(delivery, signal)`. Integration tests use real local
 * servers instead; this one is for the lab and unit tests, where the answer is the point.
 */
export function createScriptedProvider(
  channel: Channel,
  respond: (delivery: Delivery, signal: AbortSignal) => SendResult | Promise<SendResult>,
): ScriptedProvider {
  const calls: ScriptedCall[] = [];
  const delivered: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  return {
    channel,
    calls,
    delivered,
    get inFlight() {
      return inFlight;
    },
    get maxInFlight() {
      return maxInFlight;
    },
    async send(delivery, signal) {
      calls.push({ id: delivery.id, to: delivery.to, attempt: delivery.attempt });
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      try {
        const result = await respond(delivery, signal);
        if (result.kind === 'sent') delivered.push(delivery.to);
        return result;
      } finally {
        inFlight--;
      }
    },
  };
}
