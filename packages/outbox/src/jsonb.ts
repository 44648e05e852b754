/**
 * jsonb's key order (PostgreSQL's jsonb stores an object's keys sorted so): shorter UTF-8 first,
 * then bytewise. For code that rebuilds a jsonb object in JavaScript and must keep the order in
 * which pg hands it over: an object built in this order enumerates its keys as JSON.parse of the
 * column's text does (JavaScript puts integer-like keys first in both).
 */
export function jsonbKeyOrder(a: string, b: string): number {
  if (ascii(a) && ascii(b)) return a.length - b.length || (a < b ? -1 : a > b ? 1 : 0);
  return Buffer.byteLength(a) - Buffer.byteLength(b) || Buffer.compare(Buffer.from(a), Buffer.from(b));
}

// ASCII only: its UTF-16 units are its UTF-8 bytes, in length and in order.
function ascii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}
