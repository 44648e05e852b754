import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { createApp } from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { seedTenantKeys } from './support.js';

// Every request that took a token says so (RateLimit-*), a refused one as much as an accepted one:
// a client that paces itself on RateLimit-Remaining must see its 404s and 422s spend.

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let key = '';
const clock = new ManualClock(new Date('2026-12-07T12:00:00Z')); // stands still: no token comes back

beforeAll(async () => {
  t = await createTestDatabase();
  ({ acme: key } = await seedTenantKeys(t, ['acme'], clock.now()));
  app = createApp({
    db: t.db,
    clock,
    config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } },
    rateLimits: { perKey: { perSecond: 1, burst: 10 } },
  });
});
afterAll(async () => {
  await t?.close();
});

describe('RateLimit headers', () => {
  it('are on every answer that took a token: a 200, an unknown path, a wrong method, an invalid body, a missing notification', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const answers = [
      await app.request('/v1/notifications', { headers: auth }),
      await app.request('/v1/nothing-here', { headers: auth }),
      await app.request('/v1/notifications', { method: 'DELETE', headers: auth }),
      await app.request('/v1/notifications', {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'email', to: 'not-an-address', body: 'x' }),
      }),
      await app.request('/v1/notifications/ntf_01M98Y2X2N7N66YQVSY85AW41A', { headers: auth }),
      await app.request('/v1/notifications?limit=nope', { headers: auth }),
    ];
    expect(answers.map((r) => r.status)).toEqual([200, 404, 405, 422, 404, 400]);
    expect(answers.map((r) => r.headers.get('ratelimit-remaining'))).toEqual(['9', '8', '7', '6', '5', '4']);
    for (const r of answers) {
      expect(r.headers.get('ratelimit-limit')).toBe('10');
      expect(r.headers.get('ratelimit-policy')).toBe('10;w=10');
      expect(r.headers.get('x-request-id')).toMatch(/^req_/);
    }
    expect(answers[2]!.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    expect(answers[3]!.headers.get('content-type')).toBe('application/problem+json');
  });

  it('are not on an answer that took none: a 401 (no key, no bucket)', async () => {
    const res = await app.request('/v1/notifications');
    expect(res.status).toBe(401);
    expect(res.headers.get('ratelimit-remaining')).toBeNull();
  });
});
