import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fromKysely, fromPgClient } from '@notify/outbox';
import { TemplateChannelConflictError, templateInsert } from '@notify/runtime';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';

// templateInsert as a library caller uses it, without the API: the template's lock and its
// channel check are the function's own, whatever shape of database it is given.

let t: TestDatabase;
let tenant: string;
let n = 0;
const now = new Date('2026-05-01T12:00:00Z');

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  tenant = `tenant_${++n}`;
});

async function versions(name: string): Promise<{ version: number; channel: string }[]> {
  const { rows } = await t.pool.query<{ version: number; channel: string }>(
    'SELECT version, channel FROM templates WHERE tenant_id = $1 AND name = $2 ORDER BY version',
    [tenant, name],
  );
  return rows;
}

describe('templateInsert', () => {
  it('refuses a version in another channel than the template has, with a typed error, and stores nothing', async () => {
    await templateInsert(fromKysely(t.db), { tenantId: tenant, name: 'welcome', channel: 'email', subject: 'Hi', body: 'v1', now });
    const refused = templateInsert(t.db, { tenantId: tenant, name: 'welcome', channel: 'sms', body: 'Hi', now });
    await expect(refused).rejects.toBeInstanceOf(TemplateChannelConflictError);
    await expect(refused).rejects.toMatchObject({
      code: 'template_channel_conflict',
      channel: 'email',
      requested: 'sms',
      template: 'welcome',
    });
    expect(await versions('welcome')).toEqual([{ version: 1, channel: 'email' }]);
  });

  it('concurrent direct calls, through every shape of database, get consecutive versions', async () => {
    // Two clients outside BEGIN (one connection each: a client is not for concurrent callers).
    const [a, b] = await Promise.all([t.pool.connect(), t.pool.connect()]);
    try {
      const shapes = [t.db, fromKysely(t.db), t.pool, fromPgClient(t.pool), a, fromPgClient(b)];
      const results = await Promise.all(
        shapes.flatMap((db, i) => [
          templateInsert(db, { tenantId: tenant, name: 'race', channel: 'sms', body: `v${i}`, now }),
          templateInsert(db === a || db === shapes[5] ? t.db : db, { tenantId: tenant, name: 'race', channel: 'sms', body: `w${i}`, now }),
        ]),
      );
      expect(results.map((r) => r.version).sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
      // The clients' own transactions were committed, not left open: a SAVEPOINT needs an open one.
      for (const client of [a, b]) await expect(client.query('SAVEPOINT probe')).rejects.toMatchObject({ code: '25P01' });
    } finally {
      a.release();
      b.release();
    }
    expect((await versions('race')).map((v) => v.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it("in the caller's transaction the lock lasts until it ends: a writer in another channel waits, then is refused", async () => {
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const { version } = await templateInsert(fromPgClient(client), { tenantId: tenant, name: 'otp', channel: 'sms', body: 'one', now });
      expect(version).toBe(1);
      const other = templateInsert(t.db, { tenantId: tenant, name: 'otp', channel: 'email', body: 'two', now });
      const settled = other.then(
        () => 'resolved',
        () => 'rejected',
      );
      await waitFor(
        async () => {
          const { rows } = await t.pool.query<{ waiting: number }>(
            "SELECT count(*)::int AS waiting FROM pg_locks WHERE locktype = 'advisory' AND NOT granted",
          );
          return rows[0]!.waiting > 0;
        },
        { message: 'the second writer waiting for the template lock' },
      );
      await client.query('COMMIT');
      await expect(other).rejects.toBeInstanceOf(TemplateChannelConflictError);
      expect(await settled).toBe('rejected');
    } finally {
      client.release();
    }
    expect(await versions('otp')).toEqual([{ version: 1, channel: 'sms' }]);
  });
});
