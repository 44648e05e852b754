import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { PROBLEM_CATALOG, Problem, type ProblemCode, createApp } from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { seedTenantKeys } from './support.js';
import { CallbackView } from '../src/callback-schemas.js';

// PUT/GET/DELETE /v1/callbacks against the real PostgreSQL, through app.request. The SSRF policy
// is the webhook channel's: loopback is refused unless NOTIFY_WEBHOOK_ALLOW_CIDRS allows it.

let t: TestDatabase;
let strict: ReturnType<typeof createApp>;
let allowing: ReturnType<typeof createApp>;
const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'));
let keys: Record<'acme' | 'globex', string>;

beforeAll(async () => {
  t = await createTestDatabase();
  keys = await seedTenantKeys(t, ['acme', 'globex'], clock.now());
  const config = { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } };
  strict = createApp({ db: t.db, clock, config });
  allowing = createApp({ db: t.db, clock, config, webhookAllowCidrs: ['127.0.0.1/32'] });
});
afterAll(async () => {
  await t?.close();
});

function call(app: ReturnType<typeof createApp>, method: string, opts: { tenant?: keyof typeof keys; body?: unknown } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${keys[opts.tenant ?? 'acme']}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  return app.request('/v1/callbacks', { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
}

async function expectProblem(res: Response, code: ProblemCode) {
  expect(res.status).toBe(PROBLEM_CATALOG[code].status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const p = Problem.parse(await res.json());
  expect(p.type).toBe(`https://notify.dev/problems/${code}`);
  return p;
}

describe('/v1/callbacks', () => {
  it('refuses URLs the SSRF policy refuses, at registration', async () => {
    const events = ['notification.sent'];
    for (const url of [
      'http://127.0.0.1:8080/cb',
      'http://localhost/cb',
      'http://10.1.2.3/cb',
      'http://[::1]/cb',
      'http://u:p@93.184.216.34/cb',
    ]) {
      const p = await expectProblem(await call(strict, 'PUT', { body: { url, events } }), 'callback_url_refused');
      expect(p.detail).toMatch(/refused|credentials/);
    }
    // A name's addresses are not told: the kind is (else any tenant could map the internal DNS).
    const named = await expectProblem(await call(strict, 'PUT', { body: { url: 'http://localhost/cb', events } }), 'callback_url_refused');
    expect(named.detail).toBe('webhook target host "localhost" refused: every address it resolves to is refused (a loopback address)');
    // The metadata address stays refused even where the allow-list would cover it.
    await expectProblem(
      await call(
        createApp({ db: t.db, clock, config: { retry: { maxAttempts: 3, defaultTtlMs: 1_000 } }, webhookAllowCidrs: ['169.254.0.0/16'] }),
        'PUT',
        {
          body: { url: 'http://169.254.169.254/latest', events },
        },
      ),
      'callback_url_refused',
    );
    // Shape errors are validation problems.
    await expectProblem(await call(strict, 'PUT', { body: { url: 'ftp://93.184.216.34/x', events } }), 'validation_failed');
    await expectProblem(await call(strict, 'PUT', { body: { url: 'https://93.184.216.34/x', events: [] } }), 'validation_failed');
    await expectProblem(
      await call(strict, 'PUT', { body: { url: 'https://93.184.216.34/x', events: ['notification.bogus'] } }),
      'validation_failed',
    );
    await expectProblem(
      await call(strict, 'PUT', { body: { url: 'https://93.184.216.34/x', events: ['notification.sent', 'notification.sent'] } }),
      'validation_failed',
    );
    await expectProblem(await call(strict, 'GET'), 'not_found');
  });

  it('registers, replaces, shows and removes the tenant’s callback; other tenants see nothing', async () => {
    const created = await call(allowing, 'PUT', {
      body: { url: 'http://127.0.0.1:9/a', events: ['notification.sent', 'notification.dead'] },
    });
    expect(created.status).toBe(201);
    expect(CallbackView.parse(await created.json())).toMatchObject({
      url: 'http://127.0.0.1:9/a',
      events: ['notification.sent', 'notification.dead'],
      pending: 0,
      dropped: 0,
    });
    // A public address needs no allow-list.
    const replaced = await call(strict, 'PUT', { body: { url: 'https://93.184.216.34/b', events: ['notification.dead'] } });
    expect(replaced.status).toBe(200);
    await t.pool.query(
      `INSERT INTO callback_deliveries (tenant_id, event_id, notification_id, event_type, payload, next_attempt_at, created_at, updated_at)
       VALUES ('acme', 'e1', 'ntf_1', 'notification.dead', '{}', now(), now(), now()),
              ('globex', 'e1', 'ntf_2', 'notification.dead', '{}', now(), now(), now())`,
    );
    const shown = CallbackView.parse(await (await call(strict, 'GET')).json());
    expect(shown).toMatchObject({
      url: 'https://93.184.216.34/b',
      events: ['notification.dead'],
      pending: 1,
      failed: 0,
      last_dropped_at: null,
    });
    await expectProblem(await call(strict, 'GET', { tenant: 'globex' }), 'not_found');
    await expectProblem(await call(strict, 'DELETE', { tenant: 'globex' }), 'not_found');

    expect((await call(strict, 'DELETE')).status).toBe(204);
    await expectProblem(await call(strict, 'GET'), 'not_found');
    await expectProblem(await call(strict, 'DELETE'), 'not_found');
    // Its pending deliveries went with it; the other tenant's stay.
    const { rows } = await t.pool.query<{ tenant_id: string }>('SELECT tenant_id FROM callback_deliveries');
    expect(rows).toEqual([{ tenant_id: 'globex' }]);
  });

  it('needs an API key', async () => {
    const res = await strict.request('/v1/callbacks', { method: 'GET' });
    await expectProblem(res, 'unauthorized');
  });
});
