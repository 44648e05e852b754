import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PartitionOffsets } from './partition-offsets.js';

describe('PartitionOffsets', () => {
  it('commits only up to the lowest unfinished offset', () => {
    const p = new PartitionOffsets();
    [10, 11, 12, 13].forEach((o) => p.accept(o));
    expect(p.commitPoint()).toBe(10);
    p.finish(12);
    p.finish(11);
    expect(p.commitPoint()).toBe(10);
    p.finish(10);
    expect(p.commitPoint()).toBe(13);
    p.committed(13);
    expect(p.commitPoint()).toBeUndefined();
    p.finish(13);
    expect(p.commitPoint()).toBe(14);
    expect(p.unfinished).toBe(0);
  });

  it('never commits past a message that was rewound (not yet due)', () => {
    const p = new PartitionOffsets();
    p.accept(0);
    p.accept(1);
    p.rewindTo(2);
    p.finish(0);
    p.finish(1);
    expect(p.commitPoint()).toBe(2);
    expect(p.isDuplicate(1)).toBe(true);
    expect(p.isDuplicate(2)).toBe(false);
  });

  it('treats re-fetched offsets as duplicates', () => {
    const p = new PartitionOffsets();
    p.accept(5);
    expect(p.isDuplicate(5)).toBe(true);
    expect(() => p.accept(5)).toThrow(/twice/);
  });

  it('the commit point is always ≤ every unfinished offset (property)', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 300 }), fc.integer({ min: 0, max: 2 ** 40 }), (finishes, start) => {
        const p = new PartitionOffsets();
        const open = new Set<number>();
        let next = start;
        for (const finishOne of finishes) {
          if (finishOne && open.size > 0) {
            const pick = [...open][Math.floor(open.size / 2)] as number;
            open.delete(pick);
            p.finish(pick);
          } else {
            p.accept(next);
            open.add(next++);
          }
          const point = p.commitPoint();
          if (point !== undefined) {
            for (const o of open) expect(point).toBeLessThanOrEqual(o);
            p.committed(point);
          }
        }
      }),
    );
  });
});
