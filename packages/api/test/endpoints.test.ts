import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { PROBLEM_CATALOG, Problem, type ProblemCode, createApp } from '@notify/api';
import { type EndpointGate, type EndpointTarget, createEndpointGate, endpointId } from '@notify/providers';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { seedTenantKeys } from './support.js';
import { EndpointActionList, EndpointList, EndpointView } from '../src/endpoint-schemas.js';

// /v1/endpoints against the real PostgreSQL, through app.request. The endpoint rows are written
// the way the dispatchers write them: by the endpoint gate observing provider answers.

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let gate: EndpointGate;
const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'));
let keys: Record<'acme' | 'globex', string>;
const DAY = 86_400_000;

const webhook = (tenantId: string, origin: string) => ({ tenantId, channel: 'webhook' as const, origin, provider: 'primary' as const });
const failing = { kind: 'transient', error: 'HTTP 503', providerStatus: '503' } as const;
const A = webhook('acme', 'https://a.example:443');
const B = webhook('acme', 'https://b.example:443');
const MX = { tenantId: 'acme', channel: 'email' as const, origin: 'smtp://mx.example:25', provider: 'primary' as const };
const G = webhook('globex', 'https://a.example:443');
const idOf = endpointId;

beforeAll(async () => {
  t = await createTestDatabase();
  keys = await seedTenantKeys(t, ['acme', 'globex'], clock.now());
  app = createApp({
    db: t.db,
    clock,
    config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 }, endpoints: { endpointRateLimit: { perSecond: 10, burst: 20 } } },
  });
  gate = createEndpointGate(
    {
      failureThreshold: 3,
      cooldownMs: 10_000,
      disableAfterMs: 5 * DAY,
      endpointRateLimit: undefined,
      tenantRateLimit: undefined,
      stateTtlMs: 0,
      maxRateWaitMs: 0,
    },
    { db: t.db, clock, logger: silentLogger },
  );
  // A: three transient failures, its circuit opens. B and MX answered. Globex's A: one failure.
  for (let i = 0; i < 3; i++) gate.observe(A, failing);
  gate.observe(B, { kind: 'sent', providerStatus: '200' });
  gate.observe(MX, { kind: 'sent', providerStatus: '250' });
  gate.observe(G, failing);
  await gate.flush();
});
afterAll(async () => {
  await t?.close();
});

function call(method: string, path: string, opts: { tenant?: keyof typeof keys; body?: unknown; raw?: string; type?: string } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${keys[opts.tenant ?? 'acme']}` };
  if (opts.body !== undefined || opts.raw !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  return app.request(path, { method, headers, body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)) });
}

async function expectProblem(res: Response, code: ProblemCode) {
  expect(res.status).toBe(PROBLEM_CATALOG[code].status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const p = Problem.parse(await res.json());
  expect(p.type).toBe(`https://notify.dev/problems/${code}`);
  return p;
}

async function ok<T>(res: Response, schema: { parse(v: unknown): T }): Promise<T> {
  expect(res.status, await res.clone().text()).toBe(200);
  return schema.parse(await res.json());
}

const admit = async (target: EndpointTarget) => (await gate.admit(target, new AbortController().signal)).kind;

describe('GET /v1/endpoints', () => {
  it("lists the tenant's endpoints with their health, filters by state and channel, pages with a cursor", async () => {
    const all = await ok(await call('GET', '/v1/endpoints'), EndpointList);
    expect(all.data.map((e) => e.id)).toEqual([idOf(A), idOf(B), idOf(MX)].sort());
    expect(all.next_cursor).toBeNull();
    const a = all.data.find((e) => e.id === idOf(A))!;
    expect(a).toMatchObject({
      channel: 'webhook',
      origin: 'https://a.example:443',
      provider: 'primary',
      state: 'open',
      consecutive_failures: 3,
      failing_since: '2026-06-01T00:00:00.000Z',
      last_error_code: '503',
      last_failure_at: '2026-06-01T00:00:00.000Z',
      last_success_at: null,
      opened_at: '2026-06-01T00:00:00.000Z',
      probe_at: '2026-06-01T00:00:10.000Z',
      disabled_at: null,
      disabled_by: null,
      rate_limit: null,
      effective_rate_limit: { per_second: 10, burst: 20, source: 'default' },
    });
    expect(all.data.find((e) => e.id === idOf(B))).toMatchObject({
      state: 'ok',
      consecutive_failures: 0,
      last_success_at: '2026-06-01T00:00:00.000Z',
    });

    expect((await ok(await call('GET', '/v1/endpoints?state=open'), EndpointList)).data.map((e) => e.id)).toEqual([idOf(A)]);
    expect((await ok(await call('GET', '/v1/endpoints?channel=email'), EndpointList)).data.map((e) => e.id)).toEqual([idOf(MX)]);
    expect((await ok(await call('GET', '/v1/endpoints?state=disabled'), EndpointList)).data).toEqual([]);

    const seen: string[] = [];
    let cursor: string | null = '';
    while (cursor !== null) {
      const page: { data: { id: string }[]; next_cursor: string | null } = await ok(
        await call('GET', `/v1/endpoints?limit=1${cursor ? `&cursor=${cursor}` : ''}`),
        EndpointList,
      );
      expect(page.data.length).toBeLessThanOrEqual(1);
      seen.push(...page.data.map((e) => e.id));
      cursor = page.next_cursor;
    }
    expect(seen).toEqual(all.data.map((e) => e.id));
  });

  it('is scoped to the tenant and refuses bad queries with 400', async () => {
    const globex = await ok(await call('GET', '/v1/endpoints', { tenant: 'globex' }), EndpointList);
    expect(globex.data.map((e) => e.id)).toEqual([idOf(G)]);
    expect(globex.data[0]).toMatchObject({ state: 'ok', consecutive_failures: 1 });
    await expectProblem(await call('GET', `/v1/endpoints/${idOf(G)}`), 'not_found');
    await expectProblem(await call('GET', `/v1/endpoints/${idOf(A)}`, { tenant: 'globex' }), 'not_found');
    await expectProblem(await call('GET', `/v1/endpoints/${idOf(A)}/actions`, { tenant: 'globex' }), 'not_found');
    await expectProblem(await call('GET', '/v1/endpoints/ep_nope'), 'not_found');

    for (const q of ['state=closed', 'channel=fax', 'limit=0', 'limit=101', 'colour=red', 'cursor=bm90LWFuLWlk']) {
      const p = await expectProblem(await call('GET', `/v1/endpoints?${q}`), 'invalid_query');
      expect(p.errors?.length).toBeGreaterThan(0);
    }
    await expectProblem(await app.request('/v1/endpoints'), 'unauthorized');
  });

  it('shows one endpoint', async () => {
    const e = await ok(await call('GET', `/v1/endpoints/${idOf(MX)}`), EndpointView);
    expect(e).toMatchObject({ id: idOf(MX), channel: 'email', origin: 'smtp://mx.example:25', state: 'ok' });
  });
});

describe('POST /v1/endpoints/{id}/disable and /enable', () => {
  it('disables by operator and enables again, idempotently, with an action row each; the gate follows', async () => {
    expect(await admit(B)).toBe('go');
    clock.advance(1_000);
    const disabled = await ok(await call('POST', `/v1/endpoints/${idOf(B)}/disable`), EndpointView);
    expect(disabled).toMatchObject({ state: 'disabled', disabled_by: 'operator', disabled_at: clock.now().toISOString(), probe_at: null });
    expect(await admit(B)).toBe('disabled');
    clock.advance(1_000);
    // A repeat changes nothing (disabled_at stays) and records nothing.
    expect(await ok(await call('POST', `/v1/endpoints/${idOf(B)}/disable`), EndpointView)).toEqual(disabled);
    // Another tenant cannot touch it.
    await expectProblem(await call('POST', `/v1/endpoints/${idOf(B)}/enable`, { tenant: 'globex' }), 'not_found');
    expect(await admit(B)).toBe('disabled');
    // A success does not re-enable it.
    gate.observe(B, { kind: 'sent', providerStatus: '200' });
    await gate.flush();
    expect(await admit(B)).toBe('disabled');

    const enabled = await ok(await call('POST', `/v1/endpoints/${idOf(B)}/enable`), EndpointView);
    expect(enabled).toMatchObject({ state: 'ok', disabled_at: null, disabled_by: null, consecutive_failures: 0, failing_since: null });
    expect(await admit(B)).toBe('go');
    expect(await ok(await call('POST', `/v1/endpoints/${idOf(B)}/enable`), EndpointView)).toEqual(enabled);

    const actions = await ok(await call('GET', `/v1/endpoints/${idOf(B)}/actions`), EndpointActionList);
    const keyId = (await t.pool.query<{ id: string }>(`SELECT id FROM api_keys WHERE tenant_id = 'acme'`)).rows[0]!.id;
    expect(actions.data).toEqual([
      {
        action: 'disable',
        from_state: 'ok',
        to_state: 'disabled',
        rate_limit: null,
        api_key_id: keyId,
        occurred_at: '2026-06-01T00:00:01.000Z',
      },
      {
        action: 'enable',
        from_state: 'disabled',
        to_state: 'ok',
        rate_limit: null,
        api_key_id: keyId,
        occurred_at: '2026-06-01T00:00:02.000Z',
      },
    ]);
  });

  it('enable closes an open circuit and restarts the streak; it re-enables an auto-disabled endpoint', async () => {
    expect(await admit(A)).toBe('later');
    const enabled = await ok(await call('POST', `/v1/endpoints/${idOf(A)}/enable`), EndpointView);
    expect(enabled).toMatchObject({ state: 'ok', consecutive_failures: 0, failing_since: null, opened_at: null, probe_at: null });
    expect(enabled.last_error_code).toBe('503'); // history stays
    expect(await admit(A)).toBe('go');

    // Failing for 5 days: auto-disabled.
    const C = webhook('acme', 'https://c.example:443');
    gate.observe(C, failing);
    await gate.flush();
    clock.advance(5 * DAY);
    gate.observe(C, failing);
    await gate.flush();
    const auto = await ok(await call('GET', `/v1/endpoints/${idOf(C)}`), EndpointView);
    expect(auto).toMatchObject({ state: 'disabled', disabled_by: 'auto' });
    expect(await admit(C)).toBe('disabled');
    // The operator takes it over (disabled_at kept), then enables it.
    const taken = await ok(await call('POST', `/v1/endpoints/${idOf(C)}/disable`), EndpointView);
    expect(taken).toMatchObject({ state: 'disabled', disabled_by: 'operator', disabled_at: auto.disabled_at });
    expect(await ok(await call('POST', `/v1/endpoints/${idOf(C)}/enable`), EndpointView)).toMatchObject({
      state: 'ok',
      consecutive_failures: 0,
    });
    expect(await admit(C)).toBe('go');
    // The streak starts again from nothing: one failure does not disable it.
    gate.observe(C, failing);
    await gate.flush();
    expect(await ok(await call('GET', `/v1/endpoints/${idOf(C)}`), EndpointView)).toMatchObject({ state: 'ok', consecutive_failures: 1 });
    await expectProblem(await call('POST', '/v1/endpoints/ep_000000000000000000000000/enable'), 'not_found');
  });
});

describe('PATCH /v1/endpoints/{id}', () => {
  it('sets and clears the rate limit; the gate applies it', async () => {
    const set = await ok(await call('PATCH', `/v1/endpoints/${idOf(MX)}`, { body: { rate_limit: ' 2/s,burst=2 ' } }), EndpointView);
    expect(set).toMatchObject({ rate_limit: '2/s,burst=2', effective_rate_limit: { per_second: 2, burst: 2, source: 'endpoint' } });
    // The dispatchers' gate takes tokens from the endpoint's bucket: 2 go, the third is put off.
    expect([await admit(MX), await admit(MX), await admit(MX)]).toEqual(['go', 'go', 'later']);
    const cleared = await ok(await call('PATCH', `/v1/endpoints/${idOf(MX)}`, { body: { rate_limit: null } }), EndpointView);
    expect(cleared).toMatchObject({ rate_limit: null, effective_rate_limit: { per_second: 10, burst: 20, source: 'default' } });
    expect(await ok(await call('PATCH', `/v1/endpoints/${idOf(MX)}`, { body: { rate_limit: null } }), EndpointView)).toEqual(cleared);
    const actions = await ok(await call('GET', `/v1/endpoints/${idOf(MX)}/actions`), EndpointActionList);
    expect(actions.data.map((a) => [a.action, a.rate_limit, a.from_state, a.to_state])).toEqual([
      ['set_rate_limit', '2/s,burst=2', 'ok', 'ok'],
      ['set_rate_limit', null, 'ok', 'ok'],
    ]);
  });

  it('refuses bad input with problem+json and leaves the endpoint unchanged', async () => {
    const path = `/v1/endpoints/${idOf(MX)}`;
    for (const body of [
      { rate_limit: '50/x' },
      { rate_limit: '0/s' },
      { rate_limit: '5/s,burst=0' },
      { rate_limit: 5 },
      {},
      { rate_limit: null, state: 'ok' },
    ]) {
      const p = await expectProblem(await call('PATCH', path, { body }), 'validation_failed');
      expect(p.errors?.length, JSON.stringify(body)).toBeGreaterThan(0);
    }
    const p = await expectProblem(await call('PATCH', path, { body: { rate_limit: '50/x' } }), 'validation_failed');
    expect(p.errors?.[0]).toMatchObject({ path: 'rate_limit' });
    expect(p.errors?.[0]?.message).toMatch(/<count>\/<s\|m\|h>/);
    await expectProblem(await call('PATCH', path, { raw: '{"rate_limit":' }), 'malformed_json');
    await expectProblem(await call('PATCH', path, { raw: 'rate_limit=5/s', type: 'text/plain' }), 'unsupported_media_type');
    await expectProblem(await call('PATCH', path, { tenant: 'globex', body: { rate_limit: '1/s' } }), 'not_found');
    expect(await ok(await call('GET', path), EndpointView)).toMatchObject({ rate_limit: null });
  });
});
