import type { PublishMessage } from './publisher.js';

/**
 * Kafka error types that refuse a record for good: publishing the same bytes again can only fail
 * again. (kafkajs marks them `retriable: false`; the relay used to retry them forever.)
 */
export const REFUSED_FOR_GOOD = ['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD'] as const;

/**
 * The size a message takes in a record batch, near enough: key, value and header bytes plus a
 * fixed 64 bytes of record and batch overhead. Compared with the relay's `maxMessageBytes`.
 */
function messageBytes(m: Pick<PublishMessage, 'key' | 'value' | 'headers'>): number {
  let n = 64 + Buffer.byteLength(m.key) + Buffer.byteLength(m.value);
  for (const [k, v] of Object.entries(m.headers)) n += Buffer.byteLength(k) + Buffer.byteLength(v) + 2;
  return n;
}

/**
 * `messageBytes(m)` when it is over `limit`, else 0. UTF-8 takes at most 3 bytes per UTF-16 code
 * unit (a surrogate pair: 4 bytes for 2 units), so when the strings' lengths alone show that the
 * message fits, no byte is counted: the common case costs a few additions, not a UTF-8 scan of
 * every string.
 */
export function bytesOver(m: Pick<PublishMessage, 'key' | 'value' | 'headers'>, limit: number): number {
  let units = m.key.length + m.value.length;
  let count = 0;
  for (const k in m.headers) {
    units += k.length + m.headers[k]!.length;
    count++;
  }
  if (64 + 3 * units + 2 * count <= limit) return 0;
  const bytes = messageBytes(m);
  return bytes > limit ? bytes : 0;
}

/**
 * The Kafka error type when `error` (a `PublishError`, its cause, or kafkajs' wrapping of it)
 * says the broker refused a record for good; undefined for anything that may pass on retry.
 */
export function refusedForGood(error: unknown): (typeof REFUSED_FOR_GOOD)[number] | undefined {
  const seen = new Set<unknown>();
  let e: unknown = error;
  while (e && typeof e === 'object' && !seen.has(e)) {
    seen.add(e);
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && (REFUSED_FOR_GOOD as readonly string[]).includes(type))
      return type as (typeof REFUSED_FOR_GOOD)[number];
    e = (e as { cause?: unknown; originalError?: unknown }).cause ?? (e as { originalError?: unknown }).originalError;
  }
  return undefined;
}
