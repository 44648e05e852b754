/**
 * `seedApiKeys` (NOTIFY_API_KEYS at every `notify start`): idempotent by the key's hash, each key
 * under a random id that says nothing of the key.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '@notify/api';
import type { Logger } from '@notify/runtime';
import { fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { seedApiKeys } from '../src/seed-api-keys.js';

let tdb: TestDatabase;
const warned: string[] = [];
const logger: Logger = {
  error: () => {},
  warn: (o, m) => void warned.push(JSON.stringify([o, m])),
  info: () => {},
  debug: () => {},
  child: () => logger,
};
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb?.close();
});

const rows = async () =>
  (
    await tdb.pool.query<{ id: string; tenant_id: string; key_hash: string; revoked_at: Date | null }>(
      'SELECT id, tenant_id, key_hash, revoked_at FROM api_keys ORDER BY tenant_id',
    )
  ).rows;

describe('seedApiKeys', () => {
  it('stores each key once under a random id; a re-seed keeps the id and the revocation', async () => {
    const db = fromKysely(tdb.db);
    const keys = [
      { tenantId: 'acme', key: 'dev-key-change-me' },
      { tenantId: 'globex', key: 'another-dev-key' },
    ];
    expect(await seedApiKeys(db, keys, new Date(), logger)).toBe(2);
    const first = await rows();
    expect(first.map((r) => r.tenant_id)).toEqual(['acme', 'globex']);
    for (const r of first) {
      expect(r.id).toMatch(/^key_seed_[A-Za-z0-9_-]{12}$/);
      // Nothing of the hash in the id: a log line's id is no offline test of a guessed key.
      expect(r.key_hash.includes(r.id.slice('key_seed_'.length).toLowerCase())).toBe(false);
      expect(r.key_hash).toBe(hashApiKey(keys.find((k) => k.tenantId === r.tenant_id)!.key));
    }

    await tdb.pool.query("UPDATE api_keys SET revoked_at = now() WHERE tenant_id = 'acme'");
    expect(await seedApiKeys(db, keys, new Date(), logger)).toBe(0);
    const again = await rows();
    expect(again.map((r) => r.id)).toEqual(first.map((r) => r.id));
    expect(again.map((r) => r.revoked_at !== null)).toEqual([true, false]);

    // The same key for another tenant is not moved, and says so by id.
    expect(await seedApiKeys(db, [{ tenantId: 'initech', key: 'another-dev-key' }], new Date(), logger)).toBe(0);
    expect((await rows()).map((r) => r.tenant_id)).toEqual(['acme', 'globex']);
    expect(warned.join('\n')).toContain(first[1]!.id);
    expect(warned.join('\n')).not.toContain('another-dev-key');
  });
});
