import { describe, expect, it } from 'vitest';
import { pooledRandomBytes } from './random-pool.js';

describe('pooledRandomBytes', () => {
  it('gives n bytes each time, never the same bytes twice, across refills of the pool', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const bytes = pooledRandomBytes(9 + (i % 8));
      expect(bytes.length).toBe(9 + (i % 8));
      seen.add(bytes.toString('hex'));
    }
    expect(seen.size).toBe(1000);
  });
  it('keeps a view valid after the pool was refilled', () => {
    const first = pooledRandomBytes(16);
    const copy = Buffer.from(first);
    for (let i = 0; i < 600; i++) pooledRandomBytes(16); // more than 4 KiB: at least one refill
    expect(first.equals(copy)).toBe(true);
  });
  it('serves a request larger than the pool on its own', () => {
    expect(pooledRandomBytes(5000).length).toBe(5000);
  });
});
