import type { FieldIssue } from './errors.js';

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

/**
 * The first number in `value` that JSON cannot carry (Infinity, NaN), as a field issue, or null.
 * JSON.stringify writes one as `null`: `"data": {"n": 1e999}` in a request body (JSON.parse reads
 * Infinity), or a computed NaN, was stored as null without a word. Walks plain objects and arrays
 * only (what another object serializes to is its toJSON's), no deeper than PostgreSQL would take.
 */
export function nonFiniteIssue(value: unknown, path: string, depth: number): FieldIssue | null {
  if (typeof value === 'number')
    return Number.isFinite(value) ? null : { path, message: 'must be a finite number (JSON has no Infinity or NaN)' };
  if (value === null || typeof value !== 'object' || depth > 32) return null;
  const at = (key: string | number) => (path === '' ? String(key) : `${path}.${key}`);
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = nonFiniteIssue(value[i], at(i), depth + 1);
      if (problem) return problem;
    }
    return null;
  }
  const prototype: unknown = Object.getPrototypeOf(value);
  if ((prototype !== Object.prototype && prototype !== null) || typeof (value as { toJSON?: unknown }).toJSON === 'function') return null;
  for (const key of Object.keys(value)) {
    const problem = nonFiniteIssue((value as Record<string, unknown>)[key], at(key), depth + 1);
    if (problem) return problem;
  }
  return null;
}
