/** Crockford's base32 alphabet, as ULIDs use it. */
export const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** A ULID's first 10 characters: the milliseconds since the epoch in Crockford base32 (a reference for notify_ulid). */
export function ulidTime(ms: number): string {
  let s = '';
  for (let i = 0; i < 10; i++) {
    s = CROCKFORD[ms % 32] + s;
    ms = Math.floor(ms / 32);
  }
  return s;
}
