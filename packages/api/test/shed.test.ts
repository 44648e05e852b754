import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, generateApiKey, hashApiKey } from '@notify/api';
import { fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';
import { apiKeyInsert } from '../src/sql/api-key-insert.js';

// Load shedding (NOTIFY_API_MAX_IN_FLIGHT): with the API's database work held up, requests past
// the bound are answered 503 `overloaded` at once instead of queueing behind the others.
let t: TestDatabase;
let key = '';

beforeAll(async () => {
  t = await createTestDatabase();
  const k = generateApiKey();
  await apiKeyInsert(fromKysely(t.db), { id: k.id, tenantId: 'acme', keyHash: hashApiKey(k.key), name: 'acme', now: new Date() });
  key = k.key;
});
afterAll(async () => {
  await t.close();
});

describe('maxInFlight', () => {
  it('answers 503 overloaded with Retry-After past the bound, without waiting for the database, and serves again after', async () => {
    const app = createApp({ db: t.db, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } }, maxInFlight: 2 });
    const get = async () =>
      app.request('/v1/notifications/ntf_01JZZZZZZZZZZZZZZZZZZZZZZZ', { headers: { authorization: `Bearer ${key}` } });
    // Hold the key lookup: every request blocks in authentication until the lock goes.
    const locker = new pg.Client({ connectionString: t.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
      const held = [get(), get()];
      // Both are waiting on the lock (so both hold a slot) before the third arrives.
      await waitFor(
        async () => {
          const { rows } = await locker.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'api_keys'::regclass AND NOT granted",
          );
          return rows[0]!.n >= 2;
        },
        { message: 'two requests waiting on the lock' },
      );
      const shed = await get();
      expect(shed.status).toBe(503);
      expect(shed.headers.get('content-type')).toContain('application/problem+json');
      expect(shed.headers.get('retry-after')).toBe('1');
      expect(await shed.json()).toMatchObject({ code: 'overloaded', type: 'https://notify.dev/problems/overloaded' });
      await locker.query('COMMIT');
      expect((await Promise.all(held)).map((r) => r.status)).toEqual([404, 404]);
    } finally {
      await locker.end();
    }
    // The slots were given back: requests pass again.
    expect((await Promise.all([get(), get()])).map((r) => r.status)).toEqual([404, 404]);
  });
});
