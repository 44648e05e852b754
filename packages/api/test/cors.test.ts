import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { createApp, type EventLoopPressure } from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { seedTenantKeys } from './support.js';

// The CORS headers of /v1 (NOTIFY_CORS_ORIGINS), request by request; test/browser/cors.test.ts
// shows what Chromium makes of them.

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let open: ReturnType<typeof createApp>;
let plain: ReturnType<typeof createApp>;
const clock = new ManualClock(new Date());
let key = '';
const SITE = 'https://admin.example.com';
const config = { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } };

beforeAll(async () => {
  t = await createTestDatabase();
  ({ acme: key } = await seedTenantKeys(t, ['acme'], clock.now()));
  app = createApp({ db: t.db, clock, config, corsOrigins: [SITE] });
  open = createApp({ db: t.db, clock, config, corsOrigins: ['*'] });
  plain = createApp({ db: t.db, clock, config });
});
afterAll(async () => {
  await t?.close();
});

const preflight = (on: typeof app, path: string, origin: string, method = 'POST') =>
  on.request(path, {
    method: 'OPTIONS',
    headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization,content-type' },
  });

describe('CORS on /v1', () => {
  it('answers a preflight from a listed origin before authentication: the methods, the headers a client sends, a max age', async () => {
    const res = await preflight(app, '/v1/notifications', SITE);
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe(SITE);
    expect(res.headers.get('access-control-allow-methods')).toBe('GET,POST,PUT,PATCH,DELETE');
    expect(res.headers.get('access-control-allow-headers')!.split(',')).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'idempotency-key', 'traceparent']),
    );
    expect(res.headers.get('access-control-max-age')).toBe('600');
    expect(res.headers.get('vary')).toMatch(/Origin/);
    // The same answer on every /v1 path, one that exists or not: a preflight (no key, and an Origin
    // anyone can send) tells nothing of which paths and methods there are.
    for (const [path, method] of [
      ['/v1/templates/welcome/versions/1', 'DELETE'],
      ['/v1/nothing-here', 'GET'],
      ['/v1/notifications', 'PATCH'],
    ]) {
      const other = await preflight(app, path!, SITE, method);
      expect(other.status).toBe(204);
      expect(other.headers.get('access-control-allow-methods')).toBe('GET,POST,PUT,PATCH,DELETE');
    }
  });

  it('a preflight from another origin is an OPTIONS like any other: without a key a 401, and no CORS headers (the browser refuses)', async () => {
    for (const path of ['/v1/notifications', '/v1/nothing-here']) {
      const res = await preflight(app, path, 'https://evil.example.net');
      expect(res.status).toBe(401);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-allow-methods')).toBeNull();
      expect(res.headers.get('access-control-expose-headers')).toBeNull();
      expect(res.headers.get('vary')).toMatch(/Origin/);
    }
  });

  it('every answer to a listed origin carries it, a 401 too, with the headers a page may read', async () => {
    const ok = await app.request('/v1/notifications', { headers: { origin: SITE, authorization: `Bearer ${key}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(SITE);
    expect(ok.headers.get('access-control-expose-headers')!.split(',')).toEqual(
      expect.arrayContaining(['location', 'retry-after', 'x-request-id', 'ratelimit-remaining']),
    );
    const refused = await app.request('/v1/notifications', { headers: { origin: SITE } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('access-control-allow-origin')).toBe(SITE);
    const missing = await app.request('/v1/nothing-here', { headers: { origin: SITE, authorization: `Bearer ${key}` } });
    expect(missing.status).toBe(404); // what the preflight of any path let through
    expect(missing.headers.get('access-control-allow-origin')).toBe(SITE);
    const other = await app.request('/v1/notifications', {
      headers: { origin: 'https://evil.example.net', authorization: `Bearer ${key}` },
    });
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('access-control-expose-headers')).toBeNull();
    expect(other.headers.get('vary')).toMatch(/Origin/);
  });

  it('`*` allows any origin', async () => {
    const res = await preflight(open, '/v1/notifications', 'https://anywhere.example.org');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('leaves the rest as it was: an OPTIONS that is no preflight, a request without Origin, the console', async () => {
    const options = await app.request('/v1/notifications', {
      method: 'OPTIONS',
      headers: { origin: SITE, authorization: `Bearer ${key}` },
    });
    expect(options.status).toBe(204);
    expect(options.headers.get('allow')).toBe('GET, HEAD, POST, OPTIONS');
    const noOrigin = await app.request('/v1/notifications', { headers: { authorization: `Bearer ${key}` } });
    expect(noOrigin.headers.get('access-control-allow-origin')).toBeNull();
    const console = await app.request('/console/login', { headers: { origin: SITE } });
    expect(console.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('a request shed on event-loop delay, answered before everything else, carries them too; a preflight is not shed', async () => {
    // A loop 500 ms late all the time (shed.test.ts measures a real stall).
    const late: EventLoopPressure = { delayMs: () => 500, utilization: () => 0, stop: () => {} };
    const shedding = createApp({ db: t.db, clock, config, corsOrigins: [SITE], maxEventLoopDelayMs: 100, eventLoopPressure: late });
    const shedPlain = createApp({ db: t.db, clock, config, maxEventLoopDelayMs: 100, eventLoopPressure: late });
    const request = (on: typeof app, path: string, headers: Record<string, string>) =>
      on.request(path, { headers: { authorization: `Bearer ${key}`, ...headers } });
    const listed = await request(shedding, '/v1/notifications', { origin: SITE });
    expect(listed.status).toBe(503);
    expect(await listed.json()).toMatchObject({ code: 'overloaded' });
    expect(listed.headers.get('retry-after')).toBe('1');
    expect(listed.headers.get('access-control-allow-origin')).toBe(SITE);
    expect(listed.headers.get('access-control-expose-headers')!.split(',')).toContain('retry-after');
    expect(listed.headers.get('vary')).toBe('Origin');
    const other = await request(shedding, '/v1/notifications', { origin: 'https://evil.example.net' });
    expect(other.status).toBe(503);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('access-control-expose-headers')).toBeNull();
    expect(other.headers.get('vary')).toBe('Origin');
    // No Origin, the console, no NOTIFY_CORS_ORIGINS: shed as before, without CORS headers.
    for (const res of [
      await request(shedding, '/v1/notifications', {}),
      await request(shedding, '/console/login', { origin: SITE }),
      await request(shedPlain, '/v1/notifications', { origin: SITE }),
    ]) {
      expect(res.status).toBe(503);
      expect(res.headers.get('access-control-allow-origin')).toBeNull();
      expect(res.headers.get('access-control-expose-headers')).toBeNull();
    }
    // A browser reads a preflight's 503 as a network error: the preflight is answered as ever (it
    // needs no key and no database), and the request it announces is shed with readable headers.
    const pre = await preflight(shedding, '/v1/notifications', SITE);
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(SITE);
    expect(pre.headers.get('access-control-allow-methods')).toContain('POST');
    // Another origin's preflight, and any OPTIONS without NOTIFY_CORS_ORIGINS, is an OPTIONS like any other: shed.
    expect((await preflight(shedding, '/v1/notifications', 'https://evil.example.net')).status).toBe(503);
    expect((await preflight(shedPlain, '/v1/notifications', SITE)).status).toBe(503);
  });

  it('without NOTIFY_CORS_ORIGINS there are no CORS headers at all', async () => {
    const res = await preflight(plain, '/v1/notifications', SITE);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(res.headers.get('access-control-allow-methods')).toBeNull();
  });
});
