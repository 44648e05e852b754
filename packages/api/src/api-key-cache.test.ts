import { describe, expect, it } from 'vitest';
import type { SqlExecutor } from '@notify/outbox';
import { ManualClock } from '@notify/runtime/testing';
import { apiKeyLookup } from './api-key-cache.js';

// An in-memory stand-in for the api_keys lookup that counts queries (pure unit test; the real
// table and the revocation bound are covered in test/security/auth-tenancy.test.ts).
function keysDb(): SqlExecutor & { queries: number; known: Set<string>; failNext: boolean } {
  const db = {
    queries: 0,
    known: new Set<string>(['h1']),
    failNext: false,
    async query<R>(_text: string, values: readonly unknown[]) {
      db.queries++;
      await Promise.resolve();
      if (db.failNext) {
        db.failNext = false;
        throw new Error('connection lost');
      }
      const hash = values[0] as string;
      const rows = db.known.has(hash) ? [{ id: `key_${hash}`, tenant_id: 'acme', key_hash: hash, revoked_at: null }] : [];
      return { rows: rows as R[] };
    },
  };
  return db;
}

describe('apiKeyLookup', () => {
  it('remembers a found key for ttlMs from the read, then reads again', async () => {
    const db = keysDb();
    const clock = new ManualClock();
    const lookup = apiKeyLookup({ db, clock, ttlMs: 1_000 });
    expect((await lookup('h1'))?.id).toBe('key_h1');
    clock.advance(999);
    expect((await lookup('h1'))?.id).toBe('key_h1');
    expect(db.queries).toBe(1);
    clock.advance(1);
    await lookup('h1');
    expect(db.queries).toBe(2);
  });

  it('never remembers an unknown key, so a key created since works at once', async () => {
    const db = keysDb();
    const lookup = apiKeyLookup({ db, clock: new ManualClock(), ttlMs: 60_000 });
    expect(await lookup('h2')).toBeUndefined();
    db.known.add('h2');
    expect((await lookup('h2'))?.id).toBe('key_h2');
    expect(db.queries).toBe(2);
  });

  it('shares one query between concurrent lookups of a key', async () => {
    const db = keysDb();
    const lookup = apiKeyLookup({ db, clock: new ManualClock(), ttlMs: 60_000 });
    const found = await Promise.all([lookup('h1'), lookup('h1'), lookup('h1')]);
    expect(found.map((k) => k?.id)).toEqual(['key_h1', 'key_h1', 'key_h1']);
    expect(db.queries).toBe(1);
  });

  it('does not remember a failed read', async () => {
    const db = keysDb();
    const lookup = apiKeyLookup({ db, clock: new ManualClock(), ttlMs: 60_000 });
    db.failNext = true;
    await expect(lookup('h1')).rejects.toThrow('connection lost');
    expect((await lookup('h1'))?.id).toBe('key_h1');
  });

  it('with ttlMs 0 reads on every lookup', async () => {
    const db = keysDb();
    const lookup = apiKeyLookup({ db, clock: new ManualClock(), ttlMs: 0 });
    await lookup('h1');
    await lookup('h1');
    expect(db.queries).toBe(2);
  });
});
