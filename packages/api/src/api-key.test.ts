import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { API_KEY_PREFIX, generateApiKey, hashApiKey, hashesEqual, seededKeyId } from './api-key.js';

describe('API keys', () => {
  it('are stored as sha256 hex of the key', () => {
    expect(hashApiKey('nk_abc')).toBe(createHash('sha256').update('nk_abc').digest('hex'));
  });
  it('are random, prefixed and carry 256 bits', () => {
    const a = generateApiKey();
    const b = generateApiKey();
    expect(a.key.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(Buffer.from(a.key.slice(API_KEY_PREFIX.length), 'base64url')).toHaveLength(32);
    expect(a.key).not.toBe(b.key);
    expect(a.id).not.toBe(b.id);
    expect(a.id).not.toContain(a.key.slice(3, 12));
  });
  it('compare hashes by value, and never equal on different lengths or empty input', () => {
    const h = hashApiKey('k');
    expect(hashesEqual(h, hashApiKey('k'))).toBe(true);
    expect(hashesEqual(h, hashApiKey('j'))).toBe(false);
    expect(hashesEqual(h, h.slice(2))).toBe(false);
    expect(hashesEqual('', '')).toBe(false);
  });
  it('seeded ids are random: nothing of the key in them', () => {
    expect(seededKeyId()).toMatch(/^key_seed_[A-Za-z0-9_-]{12}$/);
    expect(seededKeyId()).not.toBe(seededKeyId());
  });
});
