import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { Partitioners, type PartitionMetadata } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { keyedPartitioner, murmur2, murmur2String } from './partitioner.js';

// kafkajs' own hash (not exported from the package root).
const kafkajsMurmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2') as (
  key: Buffer | string,
) => number;

const keys = (): string[] => {
  const out = ['', 'a', 'ab', 'abc', 'abcd', 'abcde', 'tenant-1/email/ada@example.com', 'ü', 'ключ/канал', '😀x', '\u0000\u00ff'];
  for (let i = 0; i < 2_000; i++) {
    const bytes = randomBytes(i % 67);
    out.push(i % 2 === 0 ? bytes.toString('base64') : bytes.toString('latin1'));
  }
  return out;
};

describe('murmur2', () => {
  it('is kafkajs’ murmur2 (the Java client’s hash) for every key', () => {
    for (const key of keys()) expect(murmur2(Buffer.from(key)), JSON.stringify(key)).toBe(kafkajsMurmur2(key));
    for (let i = 0; i < 500; i++) {
      const bytes = randomBytes(i % 41);
      expect(murmur2(bytes)).toBe(kafkajsMurmur2(bytes));
    }
  });

  it('hashes a string as its UTF-8 bytes, ASCII or not', () => {
    for (const key of keys()) expect(murmur2String(key), JSON.stringify(key)).toBe(kafkajsMurmur2(key));
  });

  it('gives the Java client’s partitions for known keys', () => {
    // Values from the Java client's Utils.murmur2 (as in kafkajs' and librdkafka's test suites).
    expect(murmur2(Buffer.from('21'))).toBe(-973932308);
    expect(murmur2(Buffer.from('foobar'))).toBe(-790332482);
  });
});

describe('keyedPartitioner', () => {
  const metadata = (n: number, leaderless: number[] = []): PartitionMetadata[] =>
    Array.from({ length: n }, (_, partitionId) => ({
      partitionId,
      leader: leaderless.includes(partitionId) ? -1 : 0,
      replicas: [0],
      isr: [0],
      offlineReplicas: [],
      partitionErrorCode: 0,
    }));

  it('picks the partition kafkajs’ DefaultPartitioner picks', () => {
    const ours = keyedPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    for (const n of [1, 3, 6, 64])
      for (const key of keys()) {
        const args = { topic: 't', partitionMetadata: metadata(n, [1]), message: { key, value: 'v' } };
        expect(ours(args)).toBe(theirs(args));
      }
    const buffer = { topic: 't', partitionMetadata: metadata(6), message: { key: Buffer.from('ключ'), value: 'v' } };
    expect(ours(buffer)).toBe(theirs(buffer));
  });

  it('still agrees after its memo of recent keys fills and is cleared', () => {
    const ours = keyedPartitioner();
    const theirs = Partitioners.DefaultPartitioner();
    const many = Array.from({ length: 20_000 }, (_, i) => `tenant-${i % 7}/email/user-${i}@example.com`);
    for (const round of [1, 2])
      for (const key of many) {
        const args = { topic: 't', partitionMetadata: metadata(6), message: { key, value: 'v' } };
        expect(ours(args), `${key}, round ${round}`).toBe(theirs(args));
      }
  });

  it('keeps an explicit partition, and spreads messages without a key', () => {
    const ours = keyedPartitioner();
    expect(ours({ topic: 't', partitionMetadata: metadata(6), message: { key: 'k', value: 'v', partition: 4 } })).toBe(4);
    const seen = new Set<number>();
    for (let i = 0; i < 60; i++) seen.add(ours({ topic: 't', partitionMetadata: metadata(6), message: { value: 'v' } }));
    expect(seen.size).toBeGreaterThan(1);
  });
});
