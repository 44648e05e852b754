import { describe, expect, it } from 'vitest';
import { settlesWithin, withTimeout } from './timeout.js';

const never = new Promise<never>(() => {});

describe('withTimeout', () => {
  it('passes a result or a rejection through', async () => {
    await expect(withTimeout(Promise.resolve(7), 1_000, () => new Error('late'))).resolves.toBe(7);
    await expect(withTimeout(Promise.reject(new Error('own')), 1_000, () => new Error('late'))).rejects.toThrow('own');
  });
  it('rejects with the given error when the promise does not settle in time', async () => {
    await expect(withTimeout(never, 5, () => new Error('late'))).rejects.toThrow('late');
  });
});

describe('settlesWithin', () => {
  it('is true for nothing, a fulfilled or a rejected promise, false for one that hangs', async () => {
    expect(await settlesWithin(null, 0)).toBe(true);
    expect(await settlesWithin(Promise.resolve(), 1_000)).toBe(true);
    expect(await settlesWithin(Promise.reject(new Error('x')), 1_000)).toBe(true);
    expect(await settlesWithin(never, 5)).toBe(false);
  });
});
