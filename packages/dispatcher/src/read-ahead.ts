/** One key's messages: `messages[head..]` have not started; `messages[head..reach)` were handed to `prefetch`. */
interface KeyLine<M> {
  readonly messages: M[];
  head: number;
  reach: number;
}

/** Options of `createReadAhead`. */
export interface ReadAheadOptions<M> {
  /** Messages of one key read ahead at most. */
  readonly depth: number;
  /** Reads ahead for one message (`DeliveryHandler.prefetch`); only a hint, it must not throw. */
  readonly prefetch: (message: M) => void;
}

/** The consumer's book of each key's waiting messages, and which of them were read ahead. */
export interface ReadAhead<M> {
  /** `message` was queued behind its key's earlier ones. */
  push(key: string, message: M): void;
  /**
   * `message` starts: it leaves its key's line, and when at most half of `depth` of the messages
   * behind it were read ahead, the line is topped up to `depth` in one go (so the reads of the
   * group share one query per batch loader). A message not in the line (a retry, which left it on
   * its first run) changes nothing.
   */
  started(key: string, message: M): void;
  /** Forgets every line (the consumer stops). */
  clear(): void;
}

/** Lines are compacted once this many started messages sit at their front. */
const COMPACT_AFTER = 1024;

/** Creates a `ReadAhead`. */
export function createReadAhead<M>(options: ReadAheadOptions<M>): ReadAhead<M> {
  const { depth, prefetch } = options;
  if (!Number.isInteger(depth) || depth < 1) throw new RangeError(`depth must be a whole number ≥ 1, got ${depth}`);
  const lines = new Map<string, KeyLine<M>>();
  return {
    push(key, message) {
      const line = lines.get(key);
      if (line) line.messages.push(message);
      else lines.set(key, { messages: [message], head: 0, reach: 0 });
    },
    started(key, message) {
      const line = lines.get(key);
      if (!line) return;
      const { messages } = line;
      const i = messages[line.head] === message ? line.head : messages.indexOf(message, line.head);
      if (i < 0) return;
      if (i === line.head) line.head++;
      else {
        messages.splice(i, 1);
        if (i < line.reach) line.reach--;
      }
      if (line.head >= messages.length) {
        lines.delete(key);
        return;
      }
      if (line.head >= COMPACT_AFTER) {
        messages.splice(0, line.head);
        line.reach = Math.max(0, line.reach - line.head);
        line.head = 0;
      }
      line.reach = Math.max(line.reach, line.head);
      if (line.reach - line.head > depth / 2) return;
      const end = Math.min(messages.length, line.head + depth);
      while (line.reach < end) prefetch(messages[line.reach++]!);
    },
    clear() {
      lines.clear();
    },
  };
}
