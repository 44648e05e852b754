/**
 * Nobody let in: every /v1 endpoint refuses requests without a key, with a wrong, malformed,
 * hash-instead-of-key or revoked key (401 problem+json with a Bearer challenge); every endpoint
 * given another tenant's notification id answers exactly like for an id that does not exist
 * (404, same body) and changes nothing; API keys are stored only as hashes (checked over every
 * text cell of the database, for keys issued by `notify api-keys create` and seeded ones), and a
 * key revoked with `notify api-keys revoke` stops working on the next request with the API-key
 * cache off (NOTIFY_API_KEY_CACHE_MS=0), and within NOTIFY_API_KEY_CACHE_MS with it on.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem, createApp, hashApiKey } from '@notify/api';
import { fromKysely, type SqlExecutor } from '@notify/outbox';
import { ManualClock } from '@notify/runtime/testing';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { allStoredText, issueTestKey, type TestKey } from '../support/chaos/tenants.js';
import { runNotifyCommand } from '../support/chaos/stack.js';

let t: TestDatabase;
let db: SqlExecutor;
let app: ReturnType<typeof createApp>;
let acme: TestKey;
let globex: TestKey;
let revoked: TestKey;
/** Notifications of acme in each state, created through the API. */
const ids = { queued: '', dead: '', sent: '' };

beforeAll(async () => {
  t = await createTestDatabase();
  db = fromKysely(t.db);
  acme = await issueTestKey(db, 'acme');
  globex = await issueTestKey(db, 'globex');
  revoked = await issueTestKey(db, 'acme', { revoked: true });
  // The key cache off: revocation is checked on the very next request (the cached bound: below).
  app = createApp({ db: t.db, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } }, apiKeyCacheMs: 0 });
  for (const state of ['queued', 'dead', 'sent'] as const) {
    const res = await call(acme, 'POST', '/v1/notifications', { channel: 'webhook', to: `https://hooks.example.com/${state}`, body: 'hi' });
    expect(res.status).toBe(202);
    ids[state] = ((await res.json()) as { id: string }).id;
  }
  // Terminal states as the dispatcher would leave them (this file runs no dispatcher).
  await t.pool.query(
    "UPDATE notifications SET state = 'dead', dead_reason = 'permanent', next_attempt_at = NULL, last_error = 'x' WHERE id = $1",
    [ids.dead],
  );
  await t.pool.query("UPDATE notifications SET state = 'sent', sent_at = now(), next_attempt_at = NULL WHERE id = $1", [ids.sent]);
});

afterAll(async () => {
  await t?.close();
});

function call(as: TestKey | string | null, method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = {};
  if (as !== null) headers.authorization = typeof as === 'string' ? as : `Bearer ${as.key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  return Promise.resolve(app.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
}

/** Every /v1 endpoint, for a given notification id. */
const endpoints = (id: string): [string, string, unknown?][] => [
  ['POST', '/v1/notifications', { channel: 'webhook', to: 'https://hooks.example.com/x', body: 'b' }],
  ['GET', '/v1/notifications'],
  ['GET', `/v1/notifications/${id}`],
  ['GET', `/v1/notifications/${id}/attempts`],
  ['GET', `/v1/notifications/${id}/actions`],
  ['POST', `/v1/notifications/${id}/cancel`],
  ['POST', `/v1/notifications/${id}/retry`],
];

async function expectProblem(res: Response, status: number) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  return Problem.parse(await res.json());
}

describe('authentication', () => {
  const badAuth: [string, () => string | null][] = [
    ['no Authorization header', () => null],
    ['an empty bearer', () => 'Bearer '],
    ['another scheme', () => `Basic ${Buffer.from(`acme:${acme.key}`).toString('base64')}`],
    ['the key without a scheme', () => acme.key],
    ['a wrong key', () => `Bearer nk_${randomBytes(32).toString('base64url')}`],
    ['the key in another case', () => `Bearer ${acme.key.toUpperCase()}`],
    ['the key with a byte more', () => `Bearer ${acme.key}x`],
    ['the key minus its last byte', () => `Bearer ${acme.key.slice(0, -1)}`],
    ['the stored hash instead of the key', () => `Bearer ${hashApiKey(acme.key)}`],
    ['a revoked key', () => `Bearer ${revoked.key}`],
    ['an oversized bearer', () => `Bearer ${'k'.repeat(20_000)}`],
  ];
  it.each(badAuth)('%s → 401 problem with a Bearer challenge, on every endpoint', async (_name, header) => {
    for (const [method, path, body] of endpoints(ids.queued)) {
      const res = await call(header(), method, path, body);
      const problem = await expectProblem(res, 401);
      expect(problem.code, `${method} ${path}`).toBe('unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="notify"/);
    }
    // Nothing was created, cancelled or retried.
    const { rows } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM notifications');
    expect(rows[0]!.n).toBe(3);
    const { rows: actions } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM notification_actions');
    expect(actions[0]!.n).toBe(0);
  });
});

describe("tenancy: another tenant's ids are 404, exactly like ids that do not exist", () => {
  it.each(['queued', 'dead', 'sent'] as const)('a %s notification of acme, seen by globex', async (state) => {
    const id = ids[state];
    const before = (await t.pool.query('SELECT * FROM notifications WHERE id = $1', [id])).rows[0];
    const missing = 'ntf_01JZZZZZZZZZZZZZZZZZZZZZZZ';
    for (const [method, path] of endpoints(id).slice(2)) {
      const res = await call(globex, method, path);
      const problem = await expectProblem(res, 404);
      // Same answer as for an id that does not exist: no existence leak (the id in the detail is the caller's own input).
      const ghost = await expectProblem(await call(globex, method, path.replace(id, missing)), 404);
      expect({ ...problem, detail: problem.detail.replace(id, '<id>'), instance: undefined }).toEqual({
        ...ghost,
        detail: ghost.detail.replace(missing, '<id>'),
        instance: undefined,
      });
    }
    const after = (await t.pool.query('SELECT * FROM notifications WHERE id = $1', [id])).rows[0];
    expect(after).toEqual(before);
    const { rows: actions } = await t.pool.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM notification_actions WHERE notification_id = $1',
      [id],
    );
    expect(actions[0]!.n).toBe(0);
  });

  it("lists and filters never show another tenant's notifications", async () => {
    for (const query of ['', '?to=https%3A%2F%2Fhooks.example.com%2Fqueued', '?state=dead', '?state=sent', '?limit=100']) {
      const res = await call(globex, 'GET', `/v1/notifications${query}`);
      expect(res.status).toBe(200);
      const body = (await res.json()) as { data: { id: string }[] };
      for (const n of body.data) expect(Object.values(ids)).not.toContain(n.id);
    }
    // A cursor made from acme's id does not reveal acme's rows either.
    const cursor = Buffer.from(ids.sent).toString('base64url');
    const res = await call(globex, 'GET', `/v1/notifications?cursor=${cursor}`);
    expect([200, 400]).toContain(res.status);
    if (res.status === 200)
      for (const n of ((await res.json()) as { data: { id: string }[] }).data) expect(Object.values(ids)).not.toContain(n.id);
  });

  it('the owner still sees and acts on its own notifications (the 404s above are not a broken route)', async () => {
    expect((await call(acme, 'GET', `/v1/notifications/${ids.queued}`)).status).toBe(200);
    expect((await call(acme, 'GET', `/v1/notifications/${ids.dead}/attempts`)).status).toBe(200);
    expect((await call(acme, 'POST', `/v1/notifications/${ids.dead}/retry`)).status).toBe(202);
    expect((await call(acme, 'POST', `/v1/notifications/${ids.queued}/cancel`)).status).toBe(200);
  });

  it("an idempotency key of one tenant does not collide with, or reveal, another tenant's request", async () => {
    const body = { channel: 'webhook', to: 'https://hooks.example.com/idem', body: 'same' };
    const a = await app.request('/v1/notifications', {
      method: 'POST',
      headers: { authorization: `Bearer ${acme.key}`, 'content-type': 'application/json', 'idempotency-key': 'shared-key' },
      body: JSON.stringify(body),
    });
    const b = await app.request('/v1/notifications', {
      method: 'POST',
      headers: { authorization: `Bearer ${globex.key}`, 'content-type': 'application/json', 'idempotency-key': 'shared-key' },
      body: JSON.stringify({ ...body, body: 'different' }),
    });
    expect(a.status).toBe(202);
    expect(b.status).toBe(202);
    expect(((await a.json()) as { id: string }).id).not.toBe(((await b.json()) as { id: string }).id);
  });
});

describe('API keys: hashes only, revocation at once (through the notify command)', () => {
  it('a key from `notify api-keys create` works, is stored nowhere in clear, and stops working when revoked', async () => {
    const env = { DATABASE_URL: t.url };
    const created = await runNotifyCommand(['api-keys', 'create', '--tenant', 'initech', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const { id, key } = JSON.parse(created.stdout.trim().split('\n').pop()!) as { id: string; key: string };
    expect(key.length).toBeGreaterThanOrEqual(32);

    expect((await call(`Bearer ${key}`, 'GET', '/v1/notifications')).status).toBe(200);
    const stored = await allStoredText(db);
    expect(stored.some((v) => v.includes(key))).toBe(false);
    expect(stored).toContain(hashApiKey(key));

    const listed = await runNotifyCommand(['api-keys', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toContain(id);
    expect(`${listed.stdout}${listed.stderr}`.includes(key)).toBe(false);
    expect(`${listed.stdout}${listed.stderr}`.includes(hashApiKey(key))).toBe(false);

    const revokedNow = await runNotifyCommand(['api-keys', 'revoke', id], env);
    expect(revokedNow.code, revokedNow.stderr).toBe(0);
    await expectProblem(await call(`Bearer ${key}`, 'GET', '/v1/notifications'), 401);
  }, 60_000);

  it('with NOTIFY_API_KEY_CACHE_MS, a revoked key keeps working at most that long after the revocation', async () => {
    const clock = new ManualClock();
    const cached = createApp({ db: t.db, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } }, clock, apiKeyCacheMs: 5_000 });
    const key = await issueTestKey(db, 'initech');
    const get = () => Promise.resolve(cached.request('/v1/notifications', { headers: { authorization: `Bearer ${key.key}` } }));
    expect((await get()).status).toBe(200);
    await runNotifyCommand(['api-keys', 'revoke', key.id], { DATABASE_URL: t.url });
    clock.advance(4_999);
    expect((await get()).status).toBe(200); // still remembered: within the bound
    clock.advance(1);
    await expectProblem(await get(), 401);
    clock.advance(60_000);
    await expectProblem(await get(), 401); // a revoked key is remembered as revoked
  }, 60_000);

  it('no key issued in this file is stored in clear', async () => {
    const stored = await allStoredText(db);
    for (const k of [acme, globex, revoked]) expect(stored.some((v) => v.includes(k.key))).toBe(false);
  });
});
