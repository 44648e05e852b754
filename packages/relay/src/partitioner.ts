import { type ICustomPartitioner, Partitioners } from 'kafkajs';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/**
 * @internal Exported for its tests.
 *
 * Kafka's murmur2 (the Java client's `Utils.murmur2`, the hash of its default partitioner) on
 * 32-bit integers. kafkajs computes the same hash with 64-bit `Long` objects, a few allocations
 * per byte: 8 % of the relay's CPU in a 20,000-row profile. Every arithmetic step keeps only the
 * low 32 bits, which `Math.imul` and `>>>` give directly; partitioner.test.ts compares it with
 * kafkajs' own murmur2 over random keys, ASCII and not.
 */
export function murmur2(data: Uint8Array): number {
  return murmur2Of(data.length, (i) => data[i]!);
}

/**
 * @internal Exported for its tests.
 *
 * `murmur2` of a string's UTF-8 bytes. A string of ASCII characters only (every message key the
 * service writes, unless a recipient is not ASCII) is its own UTF-8: it is hashed from its
 * character codes, without encoding it into a Buffer first.
 */
export function murmur2String(key: string): number {
  for (let i = 0; i < key.length; i++) if (key.charCodeAt(i) > 0x7f) return murmur2(Buffer.from(key));
  return murmur2Of(key.length, (i) => key.charCodeAt(i));
}

/** The hash of `length` bytes, byte `i` being `byte(i)`. */
function murmur2Of(length: number, byte: (i: number) => number): number {
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = byte(i) | (byte(i + 1) << 8) | (byte(i + 2) << 16) | (byte(i + 3) << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  switch (length & 3) {
    case 3:
      h ^= byte(whole + 2) << 16;
    // falls through
    case 2:
      h ^= byte(whole + 1) << 8;
    // falls through
    case 1:
      h ^= byte(whole);
      h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

// Hashes of recent string keys. A delivery request and the queued event it carries share their
// key and go out in the same batch, and a busy recipient's key recurs: each is hashed once.
// Cleared when full, so it stays small whatever the number of recipients.
const MEMO_LIMIT = 8_192;

/**
 * kafkajs' `Partitioners.DefaultPartitioner` (Java-compatible: a keyed message goes to
 * `(murmur2(key) & 0x7fffffff) % partitions`, the partition the Java client picks), with the
 * hash above (string keys through `murmur2String`, remembered per partitioner for the last
 * few thousand keys), and without the per-message filtering of the partition list that kafkajs
 * does before it looks at the key. Messages without a key or with an explicit partition go to
 * kafkajs' own partitioner, unchanged.
 */
export const keyedPartitioner: ICustomPartitioner = () => {
  const other = Partitioners.DefaultPartitioner();
  const memo = new Map<string, number>();
  return (args) => {
    const { message, partitionMetadata } = args;
    const key = message.key;
    if ((message.partition === null || message.partition === undefined) && key !== null && key !== undefined) {
      if (Buffer.isBuffer(key)) return (murmur2(key) & 0x7fffffff) % partitionMetadata.length;
      const text = String(key);
      let hash = memo.get(text);
      if (hash === undefined) {
        if (memo.size >= MEMO_LIMIT) memo.clear();
        memo.set(text, (hash = murmur2String(text) & 0x7fffffff));
      }
      return hash % partitionMetadata.length;
    }
    return other(args);
  };
};
