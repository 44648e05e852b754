import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import {
  NotificationView,
  PROBLEM_CATALOG,
  Problem,
  type ProblemCode,
  buildOpenApiDocument,
  createAdminApp,
  createApp,
  noMetrics,
} from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { seedTenantKeys } from './support.js';

// HTTP conformance an outside review of the API asked for: 405 with Allow for a wrong method,
// authentication before any 404 or 405 under /v1, and no query parameter repeated or unknown.

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
const clock = new ManualClock(new Date());
let key = '';

beforeAll(async () => {
  t = await createTestDatabase();
  ({ acme: key } = await seedTenantKeys(t, ['acme'], clock.now()));
  app = createApp({ db: t.db, clock, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } } });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => clock.advance(1));

function call(method: string, path: string, opts: { auth?: string | null; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  const auth = opts.auth === undefined ? `Bearer ${key}` : opts.auth;
  if (auth !== null) headers.authorization = auth;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  return app.request(path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
}

async function expectProblem(res: Response, code: ProblemCode) {
  expect(res.status).toBe(PROBLEM_CATALOG[code].status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  return Problem.parse(await res.json());
}

const webhook = { channel: 'webhook', to: 'https://hooks.example.com/in', body: '{}' };

/** Every /v1 path and its operations as the OpenAPI document lists them, with sample path parameters. */
const documented = Object.entries((buildOpenApiDocument() as { paths: Record<string, Record<string, unknown>> }).paths).map(
  ([path, operations]) => ({ path, url: path.replace(/\{(\w+)\}/g, 'p1'), methods: Object.keys(operations).map((m) => m.toUpperCase()) }),
);

describe('a wrong method on a known path: 405 with Allow', () => {
  it.each([
    ['DELETE', '/v1/notifications', 'GET, HEAD, POST, OPTIONS'],
    ['PUT', '/v1/notifications/ntf_01J00000000000000000000000', 'GET, HEAD, OPTIONS'],
    ['GET', '/v1/notifications/batch/x', null],
    ['POST', '/v1/templates/welcome/versions/1', 'GET, HEAD, DELETE, OPTIONS'],
    ['GET', '/v1/erasures', 'POST, OPTIONS'],
    ['PATCH', '/v1/callbacks', 'GET, HEAD, PUT, DELETE, OPTIONS'],
  ])('%s %s', async (method, path, allow) => {
    const res = await call(method, path);
    if (allow === null) {
      await expectProblem(res, 'not_found');
      expect(res.headers.get('allow')).toBeNull();
      return;
    }
    const p = await expectProblem(res, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe(allow);
    expect(p.instance).toBe(path);
    expect(p.detail).toContain(method);
    expect(p.detail).toContain(allow);
  });

  it('HEAD on a path without GET is a 405 too, without a body', async () => {
    const res = await call('HEAD', '/v1/webhook-secret/rotate'); // also DELETE /v1/webhook-secret/{id}'s shape
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST, DELETE, OPTIONS');
    expect(await res.text()).toBe('');
  });

  it('HEAD is served where GET is', async () => {
    const res = await call('HEAD', '/v1/notifications');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('');
  });

  it('OPTIONS answers 204 with Allow, and the Allow of every documented path lists exactly its documented methods', async () => {
    // A path matches a documented template when every segment is equal or a {parameter}: the
    // literal /v1/notifications/batch is also a GET /v1/notifications/{id} (a 404 for that id).
    const segments = (p: string) => p.split('/');
    const matches = (template: string, url: string) =>
      segments(template).length === segments(url).length && segments(template).every((s, i) => s.startsWith('{') || s === segments(url)[i]);
    for (const { path, url } of documented) {
      const res = await call('OPTIONS', url);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('content-type'), path).toBeNull();
      const methods = documented.filter((d) => matches(d.path, url)).flatMap((d) => d.methods);
      const expected = [...new Set([...methods, ...(methods.includes('GET') ? ['HEAD'] : []), 'OPTIONS'])];
      expect(res.headers.get('allow')!.split(', ').sort(), path).toEqual(expected.sort());
    }
  });

  it('the public documents answer 405 without a key, as they answer GET without one', async () => {
    const res = await call('POST', '/openapi.json', { auth: null });
    await expectProblem(res, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });

  it('the admin app answers a wrong method with 405 too', async () => {
    const admin = createAdminApp({ metrics: noMetrics, readiness: {} });
    const res = await admin.request('/metrics', { method: 'POST' });
    await expectProblem(res, 'method_not_allowed');
    expect(res.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });

  it('the console answers every method under /console itself, as before', async () => {
    const res = await call('DELETE', '/console/templates', { auth: null });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/login');
  });
});

describe('under /v1, authentication comes before 404 and 405', () => {
  it.each([
    ['GET', '/v1/nothing-here'],
    ['GET', '/v1'],
    ['DELETE', '/v1/notifications'],
    ['PUT', '/v1/notifications/ntf_01J00000000000000000000000'],
    ['OPTIONS', '/v1/notifications'],
    ['OPTIONS', '/v1/nothing-here'],
  ])('%s %s: 401 without a key and with a wrong one', async (method, path) => {
    for (const auth of [null, 'Bearer nk_wrong']) {
      const res = await call(method, path, { auth });
      await expectProblem(res, 'unauthorized');
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(res.headers.get('allow')).toBeNull();
    }
  });

  it('with a valid key, an unknown route is a 404', async () => {
    await expectProblem(await call('GET', '/v1/nothing-here'), 'not_found');
    await expectProblem(await call('OPTIONS', '/v1/nothing-here'), 'not_found');
  });

  it('the public routes still answer without a key', async () => {
    expect((await call('GET', '/openapi.json', { auth: null })).status).toBe(200);
    expect((await call('GET', '/docs', { auth: null })).status).toBe(200);
    const console = await call('GET', '/console/login', { auth: null });
    expect(console.status).toBe(200);
    expect(console.headers.get('content-type')).toContain('text/html');
  });
});

describe('query parameters: a repeated or unknown one is 400 invalid_query naming it', () => {
  it.each([
    ['GET', '/v1/notifications?state=sent&state=dead', 'state', /more than once/],
    ['GET', '/v1/notifications?limit=5&limit=6', 'limit', /more than once/],
    ['GET', '/v1/notifications/ntf_01J00000000000000000000000?verbose=1', 'verbose', /unknown/],
    ['GET', '/v1/suppressions?channel=email&channel=sms', 'channel', /more than once/],
    ['DELETE', '/v1/suppressions?channel=email&to=a@example.com&to=b@example.com', 'to', /more than once/],
    ['GET', '/v1/endpoints?state=ok&state=open', 'state', /more than once/],
    ['GET', '/v1/templates?name=x', 'name', /unknown/],
  ])('%s %s', async (method, path, parameter, message) => {
    const p = await expectProblem(await call(method, path), 'invalid_query');
    expect(p.detail).toContain(`"${parameter}"`);
    expect(p.errors).toEqual([{ path: parameter, message: expect.stringMatching(message) }]);
  });

  it('on a POST, before the body is read: nothing is queued', async () => {
    const before = await t.db
      .selectFrom('notifications')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    const p = await expectProblem(await call('POST', '/v1/notifications?priority=high', { body: webhook }), 'invalid_query');
    expect(p.errors).toEqual([{ path: 'priority', message: expect.stringMatching(/unknown/) }]);
    const after = await t.db
      .selectFrom('notifications')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    expect(after.n).toBe(before.n);
  });

  it('names every parameter at fault at once', async () => {
    const p = await expectProblem(await call('GET', '/v1/notifications?state=sent&state=dead&sort=asc'), 'invalid_query');
    expect(p.errors!.map((e) => e.path)).toEqual(['state', 'sort']);
  });

  it('every documented operation refuses an unknown parameter', async () => {
    for (const { path, url, methods } of documented) {
      for (const method of methods) {
        const p = await expectProblem(await call(method, `${url}?zz=1`), 'invalid_query');
        expect(p.errors, `${method} ${path}`).toEqual([{ path: 'zz', message: expect.stringMatching(/unknown/) }]);
      }
    }
  });

  it('comes after authentication: without a key it is a 401', async () => {
    await expectProblem(await call('GET', '/v1/notifications?state=sent&state=dead', { auth: null }), 'unauthorized');
  });

  it('the documented parameters, each once, still work', async () => {
    const created = await call('POST', '/v1/notifications', { body: webhook });
    expect(created.status).toBe(202);
    const n = NotificationView.parse(await created.json());
    const res = await call('GET', `/v1/notifications?state=queued&to=${encodeURIComponent(webhook.to)}&limit=5`);
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { id: string }[] }).data.map((r) => r.id)).toContain(n.id);
  });
});
