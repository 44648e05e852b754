import { describe, expect, it } from 'vitest';
import { isNotificationId, newNotificationId } from './id.js';

describe('newNotificationId', () => {
  it('is prefixed, 26 Crockford characters, and valid by isNotificationId', () => {
    const id = newNotificationId(new Date('2026-05-01T12:00:00Z'));
    expect(id).toMatch(/^ntf_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isNotificationId(id)).toBe(true);
  });
  it('sorts by time', () => {
    const a = newNotificationId(new Date('2026-05-01T12:00:00.000Z'));
    const b = newNotificationId(new Date('2026-05-01T12:00:00.001Z'));
    const c = newNotificationId(new Date('2030-01-01T00:00:00Z'));
    expect([c, b, a].sort()).toEqual([a, b, c]);
  });
  it('encodes the random bytes it is given, so two ids in one millisecond differ', () => {
    const now = new Date('2026-05-01T12:00:00Z');
    const zero = newNotificationId(now, (n) => new Uint8Array(n));
    const ones = newNotificationId(now, (n) => new Uint8Array(n).fill(255));
    expect(zero.slice(-16)).toBe('0000000000000000');
    expect(ones.slice(-16)).toBe('ZZZZZZZZZZZZZZZZ');
    expect(newNotificationId(now)).not.toBe(newNotificationId(now));
  });
  it('rejects other shapes', () => {
    expect(isNotificationId('ntf_001')).toBe(false);
    expect(isNotificationId('ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBe(true);
    expect(isNotificationId('ntf_01ARZ3NDEKTSV4RRFFQ69G5FAU')).toBe(false); // U is not Crockford
  });
});
