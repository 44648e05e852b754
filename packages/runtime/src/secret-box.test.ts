import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretsKeyError, openSecret, parseSecretsKey, sealSecret } from './secret-box.js';

describe('secret box', () => {
  const key = randomBytes(32);
  it('opens what it sealed, and the sealed form hides the secret', () => {
    const sealed = sealSecret(key, 'whsec_abc', 'acme');
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('abc');
    expect(openSecret(key, sealed, 'acme')).toBe('whsec_abc');
    expect(sealSecret(key, 'whsec_abc', 'acme')).not.toBe(sealed); // a fresh IV each time
  });
  it('refuses another key, another tenant and an altered value', () => {
    const sealed = sealSecret(key, 'whsec_abc', 'acme');
    expect(() => openSecret(randomBytes(32), sealed, 'acme')).toThrow(/does not open/);
    expect(() => openSecret(key, sealed, 'globex')).toThrow(/does not open/);
    const parts = sealed.split('.');
    parts[3] = Buffer.from('x').toString('base64url');
    expect(() => openSecret(key, parts.join('.'), 'acme')).toThrow(/does not open/);
    expect(() => openSecret(key, 'plain', 'acme')).toThrow(/v1 form/);
  });
  it('refuses a shortened authentication tag (GCM would accept a prefix of the real one)', () => {
    const sealed = sealSecret(key, 'whsec_abc', 'acme');
    const parts = sealed.split('.');
    parts[2] = Buffer.from(parts[2] ?? '', 'base64url')
      .subarray(0, 4)
      .toString('base64url');
    expect(() => openSecret(key, parts.join('.'), 'acme')).toThrow(/not in the v1 form/);
  });
  it('parses 32-byte keys in base64 or hex, and refuses anything else', () => {
    const raw = randomBytes(32);
    expect(parseSecretsKey(raw.toString('base64'))).toEqual(raw);
    expect(parseSecretsKey(raw.toString('hex'))).toEqual(raw);
    expect(() => parseSecretsKey('short')).toThrow(SecretsKeyError);
    expect(() => parseSecretsKey(randomBytes(16).toString('base64'))).toThrow(SecretsKeyError);
  });
});
