import { describe, expect, it } from 'vitest';
import { memoizeByString } from './memo.js';

describe('memoizeByString', () => {
  it('computes once per key, starts over when full, and does not remember a throw', () => {
    const calls: string[] = [];
    const upper = memoizeByString((key) => {
      calls.push(key);
      if (key === 'bad') throw new Error('refused');
      return key.toUpperCase();
    }, 2);
    expect([upper('a'), upper('a'), upper('b'), upper('b')]).toEqual(['A', 'A', 'B', 'B']);
    expect(calls).toEqual(['a', 'b']);
    upper('c'); // full: starts over, keeps only c
    upper('a');
    expect(calls).toEqual(['a', 'b', 'c', 'a']);
    expect(() => upper('bad')).toThrow('refused');
    expect(() => upper('bad')).toThrow('refused');
    expect(calls.filter((k) => k === 'bad')).toHaveLength(2);
  });
});
