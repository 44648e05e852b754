import { describe, expect, it } from 'vitest';
import { createReadAhead } from './read-ahead.js';

function setup(depth: number) {
  const read: number[] = [];
  const ahead = createReadAhead<number>({ depth, prefetch: (m) => read.push(m) });
  return { ahead, read };
}

describe('createReadAhead', () => {
  it('reads up to depth messages behind the one that starts, topped up in groups once half are used', () => {
    const { ahead, read } = setup(4);
    for (let m = 0; m < 10; m++) ahead.push('k', m);
    ahead.started('k', 0);
    expect(read).toEqual([1, 2, 3, 4]);
    ahead.started('k', 1); // 3 still read ahead (2, 3, 4): more than half
    expect(read).toEqual([1, 2, 3, 4]);
    ahead.started('k', 2); // 2 left: half, so top up to 4
    expect(read).toEqual([1, 2, 3, 4, 5, 6]);
    ahead.started('k', 3);
    ahead.started('k', 4);
    expect(read).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const m of [5, 6, 7, 8, 9]) ahead.started('k', m);
    expect(read).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]); // each read once, in order
  });

  it('with depth 1 reads just the next message, as each one starts', () => {
    const { ahead, read } = setup(1);
    for (let m = 0; m < 4; m++) ahead.push('k', m);
    for (let m = 0; m < 4; m++) ahead.started('k', m);
    expect(read).toEqual([1, 2, 3]);
  });

  it('reads messages pushed after the line was read to its end when the next one starts', () => {
    const { ahead, read } = setup(4);
    ahead.push('k', 0);
    ahead.push('k', 1);
    ahead.started('k', 0);
    expect(read).toEqual([1]);
    ahead.push('k', 2);
    ahead.push('k', 3);
    ahead.started('k', 1);
    expect(read).toEqual([1, 2, 3]);
  });

  it('keeps keys apart, ignores a message not in its line (a retry), and forgets a line once it is empty', () => {
    const { ahead, read } = setup(2);
    ahead.push('a', 1);
    ahead.push('b', 10);
    ahead.push('a', 2);
    ahead.push('b', 11);
    ahead.started('a', 1);
    ahead.started('b', 10);
    expect(read).toEqual([2, 11]);
    ahead.started('a', 99);
    ahead.started('a', 2);
    ahead.started('a', 2); // already left: nothing
    ahead.push('a', 3); // a new line
    ahead.started('a', 3);
    expect(read).toEqual([2, 11]);
  });

  it('takes a message out of the middle of its line without reading one twice', () => {
    const { ahead, read } = setup(4);
    for (let m = 0; m < 8; m++) ahead.push('k', m);
    ahead.started('k', 0);
    expect(read).toEqual([1, 2, 3, 4]);
    ahead.started('k', 3); // out of order (not how the scheduler starts them, but harmless)
    ahead.started('k', 1);
    expect(read).toEqual([1, 2, 3, 4, 5, 6]); // 2 and 4 left read ahead: topped up with 5 and 6
    ahead.started('k', 2);
    ahead.started('k', 4);
    expect(read).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('stays right past its compaction point on a long line', () => {
    const { ahead, read } = setup(16);
    const n = 5_000;
    for (let m = 0; m < n; m++) ahead.push('k', m);
    for (let m = 0; m < n; m++) ahead.started('k', m);
    expect(read).toEqual(Array.from({ length: n - 1 }, (_, i) => i + 1));
  });

  it('refuses a depth below 1', () => {
    expect(() => setup(0)).toThrow(RangeError);
  });
});
