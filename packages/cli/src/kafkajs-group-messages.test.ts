import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

// kafkajs splits every send's messages by partition with this function; patches/kafkajs@2.2.4.patch
// appends to one array per partition instead of copying the array and the result object per message
// (O(n²) in a partition's messages). The relay and the dispatcher send through it, so the patched
// function must give exactly what the original gives.
type Group = (args: {
  topic: string;
  partitionMetadata: unknown[];
  messages: unknown[];
  partitioner: Partitioner;
}) => Record<string, unknown[]>;
type Partitioner = (args: { topic: string; partitionMetadata: unknown[]; message: unknown }) => number;
const groupMessagesPerPartition = createRequire(import.meta.url)('kafkajs/src/producer/groupMessagesPerPartition.js') as Group;

/** kafkajs 2.2.4's own function, unpatched. */
const original: Group = ({ topic, partitionMetadata, messages, partitioner }) => {
  if (partitionMetadata.length === 0) return {};
  return messages.reduce<Record<string, unknown[]>>((result, message) => {
    const partition = partitioner({ topic, partitionMetadata, message });
    const current = result[partition] ?? [];
    return Object.assign(result, { [partition]: [...current, message] });
  }, {});
};

describe('kafkajs groupMessagesPerPartition (patched)', () => {
  it('groups as the original does: same partitions, same messages in the same order, the partitioner called once per message in order', () => {
    const partitionMetadata = Array.from({ length: 6 }, (_, partitionId) => ({ partitionId }));
    for (const count of [0, 1, 2, 7, 100, 1_000]) {
      const messages = Array.from({ length: count }, (_, i) => ({ key: `k${(i * 7919) % 13}`, value: `v${i}` }));
      const calls: unknown[][] = [[], []];
      const partitioner =
        (log: unknown[]): Partitioner =>
        ({ message }) => {
          log.push(message);
          return Number((message as { key: string }).key.slice(1)) % 6;
        };
      const got = groupMessagesPerPartition({ topic: 't', partitionMetadata, messages, partitioner: partitioner(calls[0]!) });
      const want = original({ topic: 't', partitionMetadata, messages, partitioner: partitioner(calls[1]!) });
      expect(got).toEqual(want);
      expect(Object.keys(got)).toEqual(Object.keys(want));
      expect(calls[0]).toEqual(messages);
      expect(calls[1]).toEqual(messages);
    }
  });

  it('returns an empty grouping without partition metadata, calling no partitioner', () => {
    let called = 0;
    const got = groupMessagesPerPartition({ topic: 't', partitionMetadata: [], messages: [{ value: 'x' }], partitioner: () => ++called });
    expect(got).toEqual({});
    expect(called).toBe(0);
  });
});
