import { pooledRandomBytes } from './random-pool.js';

// Crockford base32: no I, L, O, U, so ids read aloud and copy safely.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** The prefix of every notification id. */
export const NOTIFICATION_ID_PREFIX = 'ntf_';

/**
 * A new notification id: `ntf_` + 26 Crockford base32 characters (a ULID: 48 bits of
 * milliseconds, then 80 random bits). Time-ordered, so ids sort by creation time and index
 * well; 80 random bits, so they cannot be guessed (from the operating system's CSPRNG through
 * `pooledRandomBytes`).
 */
export function newNotificationId(now: Date, random: (n: number) => Uint8Array = pooledRandomBytes): string {
  let ms = now.getTime();
  let time = '';
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[ms % 32] + time;
    ms = Math.floor(ms / 32);
  }
  const bytes = random(10);
  let bits = 0;
  let value = 0;
  let rand = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      rand += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
  }
  return NOTIFICATION_ID_PREFIX + time + rand;
}

const ID_PATTERN = /^ntf_[0-9A-HJKMNP-TV-Z]{26}$/;

/** True when `id` has the shape of a notification id (it may still not exist). */
export function isNotificationId(id: string): boolean {
  return ID_PATTERN.test(id);
}
