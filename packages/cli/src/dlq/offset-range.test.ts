import { describe, expect, it } from 'vitest';
import { parseOffsetRange, parseOffsetRanges } from './offset-range.js';

describe('parseOffsetRange', () => {
  it('reads a closed range, an open one and a single offset', () => {
    expect(parseOffsetRange('0:120-180')).toEqual({ partition: 0, from: 120n, to: 180n });
    expect(parseOffsetRange('3:7-')).toEqual({ partition: 3, from: 7n, to: undefined });
    expect(parseOffsetRange(' 2:42 ')).toEqual({ partition: 2, from: 42n, to: 42n });
  });

  it('keeps offsets beyond 2^53 exact', () => {
    expect(parseOffsetRange('1:9007199254740993-9007199254740995').from).toBe(9007199254740993n);
  });

  it.each(['', '0', '0:', ':1-2', '0:-5', 'a:1-2', '0:1-2-3', '0:1,2'])('refuses %j with a usage error', (text) => {
    expect(() => parseOffsetRange(text)).toThrow(
      expect.objectContaining({ exitCode: 2, message: expect.stringContaining('PARTITION:FROM-TO') }),
    );
  });

  it('refuses a range that ends before it starts', () => {
    expect(() => parseOffsetRange('0:9-3')).toThrow(/ends before it starts/);
  });
});

describe('parseOffsetRanges', () => {
  it('needs at least one range and one per partition, and sorts them by partition', () => {
    expect(() => parseOffsetRanges(undefined)).toThrow(/at least one --topic-offset-range/);
    expect(() => parseOffsetRanges(['1:0-5', '1:9-'])).toThrow(/partition 1 is given twice/);
    expect(parseOffsetRanges(['2:0-1', '0:5']).map((r) => r.partition)).toEqual([0, 2]);
  });
});
