import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { CROCKFORD, ulidTime } from '../../../test/support/ulid.js';

// notify_ulid (migrations 0006, 0192) writes the ids PostgreSQL gives notifications: 10 Crockford
// characters of the milliseconds, then 16 of 80 random bits. 0192 computes the time characters
// with one base64 encoding instead of ten lookups; these are the values they must keep.
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

// 0006's random part: bytes 1-6 and 10-16 of the UUID, base64, 64 characters onto 32.
function ulidRandom(random: Buffer): string {
  const kept = Buffer.concat([random.subarray(0, 6), random.subarray(9, 15)]);
  const base64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  return [...kept.toString('base64')].map((c) => CROCKFORD[base64.indexOf(c) % 32]).join('');
}

describe('notify_ulid', () => {
  it('writes the milliseconds as 10 Crockford characters and keeps the random part', async () => {
    const ms = [0, 1, 31, 32, 1023, 1024, 2 ** 40 - 1, 2 ** 40, 2 ** 45, 2 ** 48 - 1, Date.UTC(2026, 11, 2), 1_764_662_400_123];
    for (let i = 0; i < 200; i++) ms.push(Math.floor(Math.random() * 2 ** 48));
    const randoms = ms.map((_, i) => Buffer.from(Array.from({ length: 16 }, (_, j) => (i * 37 + j * 11) % 256)));
    const { rows } = await t.pool.query<{ id: string }>(
      'SELECT notify_ulid(m, r) AS id FROM unnest($1::bigint[], $2::bytea[]) WITH ORDINALITY AS u(m, r, n) ORDER BY n',
      [ms.map(String), randoms],
    );
    expect(rows.map((r) => r.id)).toEqual(ms.map((m, i) => ulidTime(m) + ulidRandom(randoms[i]!)));
  });
});
