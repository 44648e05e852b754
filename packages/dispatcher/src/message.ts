import { HEADERS, parseDeliveryRequest } from '@notify/contract';
import type { IHeaders, KafkaMessage } from 'kafkajs';
import type { OutcomePlan } from './outcome.js';

/** A message as the dispatcher reads it from Kafka (tests replay outbox rows in the same shape). */
export interface InboundMessage {
  /** The full topic name, `<prefix>.requests` or `<prefix>.retry.<tier>`. */
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
  readonly key: Buffer | null;
  /** The exact bytes read: parsing happens in the handler, so a bad message can be dead-lettered as it came. */
  readonly value: Buffer | null;
  /** Header values as UTF-8 strings (the first value when a header repeats). */
  readonly headers: Readonly<Record<string, string>>;
}

/**
 * Why a message was dead-lettered, as a stable code (a metrics label; the `dlq-reason` header
 * carries the human text, which may name ids).
 */
export const DEAD_LETTER_CODES = [
  'empty',
  'bad_json',
  'unknown_version',
  'invalid_message',
  'unknown_notification',
  'mismatch',
  'attempt_ahead',
  'attempt_over_max',
  'due_out_of_range',
] as const;
/** One of `DEAD_LETTER_CODES`. */
export type DeadLetterCode = (typeof DEAD_LETTER_CODES)[number];

/** The code of a `parseDeliveryRequest` failure reason. */
export function parseFailureCode(reason: string): DeadLetterCode {
  if (reason.startsWith('empty message')) return 'empty';
  if (reason.startsWith('value is not valid JSON')) return 'bad_json';
  if (reason.startsWith('unknown schema version') || reason.startsWith('no schema version')) return 'unknown_version';
  return 'invalid_message';
}

/**
 * Why a message was skipped: the notification is terminal; the attempt was done; another delivery
 * recorded it first; or the notification's next attempt is not due yet (`next_attempt_at` ahead of
 * now), so another message carries it.
 */
export type SkipReason = 'terminal' | 'attempt-done' | 'raced' | 'early';

/** What handling one message came to. */
export type HandleResult =
  /** The attempt was made (or its outcome decided without a provider call) and recorded. */
  | { readonly kind: 'recorded'; readonly notificationId: string; readonly plan: OutcomePlan }
  /** Nothing to do (`SkipReason`). */
  | { readonly kind: 'skipped'; readonly notificationId: string; readonly reason: SkipReason }
  /** The message is unusable: the dead-letter middleware publishes it to `<prefix>.dlq` with this reason. */
  | { readonly kind: 'dead-letter'; readonly code: DeadLetterCode; readonly reason: string }
  /** Published to the dead-letter topic. */
  | { readonly kind: 'dead-lettered'; readonly code: DeadLetterCode; readonly reason: string }
  /** Strict ordering: an earlier notification to the same recipient is still queued; no attempt was spent, a new message carries it at `dueAt`. */
  | { readonly kind: 'deferred'; readonly notificationId: string; readonly dueAt: Date }
  /** Not due yet (only if the clock moved back since the consumer checked): deliver again at `dueAt`. */
  | { readonly kind: 'not-due'; readonly dueAt: Date }
  /** Shutdown cut the provider call: nothing recorded, the message stays unacknowledged and comes again. */
  | { readonly kind: 'abandoned'; readonly notificationId: string };

/** What the consumer lets a handler tell it before the handler ends. */
export interface HandlerHooks {
  /**
   * The provider call of this delivery has returned (or it decided its outcome without one), and
   * only the outcome's write is left: the next message of the same key may start now. Called at
   * most once. The message is still unfinished (its offset is not committed) until the handler ends.
   * Returns true when a next message of the key was waiting (and so starts now): the key is busy.
   */
  readonly providerReturned?: () => boolean | void;
}

/**
 * Handles one message. `signal` aborts on shutdown. Throws only for failures worth retrying
 * (database unreachable, dead-letter topic unwritable); the consumer retries the same message later.
 */
export type MessageHandler = (message: InboundMessage, signal: AbortSignal, hooks?: HandlerHooks) => Promise<HandleResult>;

/** Wraps a handler (dead-lettering, tracing). */
export type Middleware = (next: MessageHandler) => MessageHandler;

/** `compose(a, b)(h)` is `a(b(h))`: the first middleware is the outermost. */
export function compose(...middlewares: readonly Middleware[]): Middleware {
  return (handler) => middlewares.reduceRight((next, m) => m(next), handler);
}

/** A Kafka header's value as text (the first when it repeats), or undefined when absent. */
function headerValueText(raw: IHeaders[string]): string | undefined {
  const v = Array.isArray(raw) ? raw[0] : raw;
  return v === undefined ? undefined : typeof v === 'string' ? v : v.toString('utf8');
}

/** Kafka headers as strings. */
export function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers) return out;
  // for…in, not Object.entries: no [name, value] array per header of every message (kafkajs
  // builds `headers` as a plain object of its own keys).
  for (const name in headers) {
    if (!Object.hasOwn(headers, name)) continue;
    const v = headerValueText(headers[name]);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

/** One Kafka header as `headersToStrings` would give it, without decoding the others. */
export function headerText(headers: IHeaders | undefined, name: string): string | undefined {
  return headers ? headerValueText(headers[name]) : undefined;
}

/** A kafkajs message as an `InboundMessage`. */
export function fromKafkaMessage(topic: string, partition: number, message: KafkaMessage): InboundMessage {
  return { topic, partition, offset: message.offset, key: message.key, value: message.value, headers: headersToStrings(message.headers) };
}

/**
 * The instant before which the message must not be delivered: the body's `due_at`, else the
 * `due-at` header, else undefined (due now; an unparseable message goes to the handler, which
 * dead-letters it).
 */
export function messageDueAt(message: Pick<InboundMessage, 'value' | 'headers'>): Date | undefined {
  const parsed = parseInboundRequest(message.value);
  const raw = parsed.ok ? parsed.message.due_at : message.headers[HEADERS.dueAt];
  if (raw === undefined) return undefined;
  const due = new Date(raw);
  return Number.isNaN(due.getTime()) ? undefined : due;
}

const parsedValues = new WeakMap<Buffer, ReturnType<typeof parseDeliveryRequest>>();

/**
 * `parseDeliveryRequest` of a message's value, computed once per value buffer: the consumer reads
 * `due_at` when the message arrives and the handler the rest when it runs, from one JSON parse and
 * one schema check. The result is read-only; a value that is not a Buffer is parsed every time.
 */
export function parseInboundRequest(value: Buffer | null): ReturnType<typeof parseDeliveryRequest> {
  if (!Buffer.isBuffer(value)) return parseDeliveryRequest(value);
  let parsed = parsedValues.get(value);
  if (!parsed) {
    parsed = parseDeliveryRequest(value);
    parsedValues.set(value, parsed);
  }
  return parsed;
}

/** The ordering key: the Kafka key (tenant/channel/recipient hash); a keyless message is ordered with its partition. */
export function orderingKey(message: Pick<InboundMessage, 'key' | 'topic' | 'partition'>): string {
  return message.key && message.key.length > 0 ? message.key.toString('utf8') : `\u0000${message.topic}|${message.partition}`;
}
