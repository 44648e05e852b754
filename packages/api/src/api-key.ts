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

/**
 * A new id for a seeded (NOTIFY_API_KEYS) key: random, like a generated key's, so the id in a log
 * says nothing of the key (one derived from the key's hash let a reader of the logs test guesses
 * of a weak development key offline). Re-seeding stays idempotent: the key's hash is unique and
 * the insert does nothing on it, so a key seeded before keeps its first id.
 */
export function seededKeyId(random: (n: number) => Buffer = randomBytes): string {
  return `key_seed_${random(9).toString('base64url')}`;
}
