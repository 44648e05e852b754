import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { SqlExecutor } from '@notify/outbox';
import { hashApiKey } from '../api-key.js';
import type { AppEnv } from '../env.js';
import { problemFromError, problemResponse } from '../problem.js';
import { bearerAuth } from './bearer-auth.js';

// An in-memory stand-in for the api_keys lookup (pure unit test; the real table is covered in test/).
function keysDb(rows: { id: string; tenant_id: string; key: string; revoked?: boolean }[]): SqlExecutor & { queries: number } {
  const db = {
    queries: 0,
    async query<R>(_text: string, values: readonly unknown[]) {
      db.queries++;
      const found = rows.find((r) => hashApiKey(r.key) === values[0]);
      const out = found
        ? [{ id: found.id, tenant_id: found.tenant_id, key_hash: hashApiKey(found.key), revoked_at: found.revoked ? new Date() : null }]
        : [];
      return { rows: out as R[] };
    },
  };
  return db;
}

function app(db: SqlExecutor) {
  const a = new Hono<AppEnv>();
  a.onError((err) => {
    const p = problemFromError(err);
    return problemResponse(p.body, p.headers);
  });
  a.use('*', bearerAuth({ db }));
  a.get('/', (c) => c.json(c.get('auth')));
  return a;
}

describe('bearerAuth', () => {
  const db = keysDb([
    { id: 'key_a', tenant_id: 'acme', key: 'nk_good' },
    { id: 'key_r', tenant_id: 'acme', key: 'nk_revoked', revoked: true },
  ]);

  it('sets the tenant and key id for a valid key', async () => {
    const res = await app(db).request('/', { headers: { authorization: 'Bearer nk_good' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ tenantId: 'acme', apiKeyId: 'key_a' });
  });
  it('accepts the scheme in any case', async () => {
    expect((await app(db).request('/', { headers: { authorization: 'bearer nk_good' } })).status).toBe(200);
  });
  it.each([
    ['no header', undefined, 'send your API key'],
    ['another scheme', 'Basic dXNlcjpwYXNz', 'send your API key'],
    ['an empty token', 'Bearer ', 'send your API key'],
    ['an unknown key', 'Bearer nk_bad', 'not valid'],
    ['a revoked key', 'Bearer nk_revoked', 'revoked'],
  ])('401 problem for %s', async (_name, header, detail) => {
    const res = await app(db).request('/', { headers: header ? { authorization: header } : {} });
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="notify"/);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({
      type: 'https://notify.dev/problems/unauthorized',
      status: 401,
      detail: expect.stringContaining(detail),
    });
  });
  it('does not query the database for a malformed header', async () => {
    const fresh = keysDb([]);
    await app(fresh).request('/', { headers: { authorization: 'Token x' } });
    expect(fresh.queries).toBe(0);
  });
});
