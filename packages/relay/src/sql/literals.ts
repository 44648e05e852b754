import pg from 'pg';

// The relay's claim transaction sends its statements without parameters, values written into the
// text as literals: a message without parameters (the simple query protocol) may hold several
// statements, so BEGIN goes with the claim and the mark with COMMIT, one round trip each. A
// parameterised statement is a message of its own. Only values of these checked shapes go in.

/** A string literal (pg's escaping: quotes doubled, backslashes as an E'' string). */
export const textLiteral = (s: string): string => pg.escapeLiteral(s);

/** An integer, checked. */
export function intLiteral(n: number): string {
  if (!Number.isSafeInteger(n)) throw new TypeError(`expected an integer, got ${n}`);
  return String(n);
}

/** A finite number, checked. */
export function numberLiteral(n: number): string {
  if (!Number.isFinite(n)) throw new TypeError(`expected a finite number, got ${n}`);
  return String(n);
}

/** A 64-bit unsigned integer given as decimal digits (a bigint id or an xid8, as PostgreSQL returns them). */
export function digitsLiteral(s: string): string {
  if (!/^\d{1,20}$/.test(s)) throw new TypeError(`expected decimal digits, got ${JSON.stringify(s.slice(0, 40))}`);
  return s;
}

/** A `timestamptz` (ISO 8601, UTC, millisecond precision as a JS Date has). */
export const timeLiteral = (d: Date): string => `'${d.toISOString()}'::timestamptz`;

/** An `integer[]`. */
export const intArrayLiteral = (a: readonly number[]): string => `'{${a.map(intLiteral).join(',')}}'::integer[]`;

/** A `bigint[]` of ids given as decimal digits. */
export const bigintArrayLiteral = (a: readonly string[]): string => `'{${a.map(digitsLiteral).join(',')}}'::bigint[]`;
