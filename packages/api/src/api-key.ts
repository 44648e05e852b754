import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Every key this service issues starts with this, so a leaked key is recognisable in a scan. */
export const API_KEY_PREFIX = 'nk_';

/** The stored form of a key: sha256, hex. The key itself is never stored or logged. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Compares two hex hashes in constant time (length differences return false at once; lengths are public). */
export function hashesEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && x.length > 0 && timingSafeEqual(x, y);
}

/** A new key (`nk_` + 32 random bytes, base64url) and the id under which it is stored. */
export function generateApiKey(random: (n: number) => Buffer = randomBytes): { readonly id: string; readonly key: string } {
  return {
    id: `key_${random(9).toString('base64url')}`,
    key: `${API_KEY_PREFIX}${random(32).toString('base64url')}`,
  };
}

/** The id under which a seeded (NOTIFY_API_KEYS) key is stored: derived from its hash, so re-seeding is idempotent. */
export function seededKeyId(keyHash: string): string {
  return `key_seed_${keyHash.slice(0, 16)}`;
}
