import { sql } from 'kysely';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { parseDeliveryRequest, parseStatusEvent } from '@notify/contract';
import { ManualClock } from '@notify/runtime/testing';
import {
  ActionList,
  AttemptList,
  NotificationList,
  NotificationView,
  PROBLEM_CATALOG,
  Problem,
  type ProblemCode,
  createAdminApp,
  createApp,
  generateApiKey,
  hashApiKey,
} from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { apiKeyInsert } from '../src/sql/api-key-insert.js';
import { apiKeyRevoke } from '../src/sql/api-key-revoke.js';
import { fromKysely } from '@notify/outbox';
import { createMetrics } from '@notify/cli';

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let admin: ReturnType<typeof createAdminApp>;
const clock = new ManualClock(new Date());
const BUDGET = 4;
const keys = { acme: '', globex: '', revoked: '' };
const keyIds = { acme: '' };

beforeAll(async () => {
  t = await createTestDatabase();
  const db = fromKysely(t.db);
  for (const tenant of ['acme', 'globex', 'revoked'] as const) {
    const k = generateApiKey();
    await apiKeyInsert(db, {
      id: k.id,
      tenantId: tenant === 'revoked' ? 'acme' : tenant,
      keyHash: hashApiKey(k.key),
      name: tenant,
      now: clock.now(),
    });
    keys[tenant] = k.key;
    if (tenant === 'acme') keyIds.acme = k.id;
    if (tenant === 'revoked') await apiKeyRevoke(db, { id: k.id, now: clock.now() });
  }
  // The service's metrics registry (the notify command's), so GET /metrics shows what `notify start` serves.
  const metrics = createMetrics({ db: t.db, clock, processMetrics: false });
  app = createApp({ db: t.db, clock, config: { retry: { maxAttempts: BUDGET, defaultTtlMs: 3_600_000 } }, metrics });
  admin = createAdminApp({
    metrics,
    readiness: {
      database: async () => {
        await t.db.selectNoFrom((eb) => eb.lit(1).as('one')).execute();
      },
    },
  });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  clock.advance(1); // ids are time-ordered: give every test its own millisecond
});

type Tenant = keyof typeof keys;

function call(
  method: string,
  path: string,
  opts: { tenant?: Tenant | null; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.tenant !== null) headers.authorization = `Bearer ${keys[opts.tenant ?? 'acme']}`;
  let body: string | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  return app.request(path, { method, headers, body });
}

const webhook = (over: Record<string, unknown> = {}) => ({
  channel: 'webhook',
  to: 'https://hooks.example.com/in',
  body: '{"hello":1}',
  ...over,
});

async function create(over: Record<string, unknown> = {}, tenant: Tenant = 'acme', headers: Record<string, string> = {}) {
  clock.advance(1);
  const res = await call('POST', '/v1/notifications', { tenant, body: webhook(over), headers });
  expect(res.status).toBe(202);
  return NotificationView.parse(await res.json());
}

/** Asserts an RFC 9457 response: status, media type, stable type URI and a body that parses as a Problem. */
async function expectProblem(res: Response, code: ProblemCode) {
  const status = PROBLEM_CATALOG[code].status;
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  const body = Problem.parse(await res.json());
  expect(body).toMatchObject({ type: `https://notify.dev/problems/${code}`, title: PROBLEM_CATALOG[code].title, status, code });
  expect(body.detail.length).toBeGreaterThan(0);
  return body;
}

/** The notification's Kafka messages in the outbox, in publish order (the queued event rides on the request row). */
async function outboxFor(id: string) {
  return t.db
    .selectFrom('outbox_messages')
    .selectAll()
    .where(sql`headers->>'notification-id'`, '=', id)
    .orderBy('id')
    .orderBy('part')
    .execute();
}

async function setState(id: string, state: 'sent' | 'dead', over: Record<string, unknown> = {}) {
  const now = clock.now();
  await t.db
    .updateTable('notifications')
    .set(
      state === 'sent'
        ? { state, sent_at: now, next_attempt_at: null, attempts: 1, updated_at: now, ...over }
        : {
            state,
            dead_reason: 'exhausted',
            next_attempt_at: null,
            attempts: BUDGET,
            last_error: 'provider returned 503',
            updated_at: now,
            ...over,
          },
    )
    .where('id', '=', id)
    .execute();
}

describe('POST /v1/notifications', () => {
  it('202: queues the notification, with Location, and writes the delivery request and the queued event to the outbox', async () => {
    clock.advance(1);
    const res = await call('POST', '/v1/notifications', { body: webhook({ metadata: { order: '42' } }) });
    expect(res.status).toBe(202);
    const n = NotificationView.parse(await res.json());
    expect(res.headers.get('location')).toBe(`/v1/notifications/${n.id}`);
    expect(n).toMatchObject({
      channel: 'webhook',
      to: 'https://hooks.example.com/in',
      state: 'queued',
      attempts: 0,
      max_attempts: BUDGET,
      dead_reason: null,
      last_error: null,
      sent_at: null,
      metadata: { order: '42' },
      created_at: clock.now().toISOString(),
      next_attempt_at: clock.now().toISOString(),
      expires_at: new Date(clock.now().getTime() + 3_600_000).toISOString(),
    });
    const rows = await outboxFor(n.id);
    expect(rows.map((r) => r.topic)).toEqual(['requests', 'events']);
    expect(parseDeliveryRequest(rows[0]!.value)).toMatchObject({ ok: true, message: { id: n.id, tenant_id: 'acme', attempt: 1 } });
    expect(parseStatusEvent(rows[1]!.value)).toMatchObject({ ok: true, message: { type: 'notification.queued' } });
  });

  it('stores the caller’s traceparent on the notification and its Kafka headers', async () => {
    const tp = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const n = await create({}, 'acme', { traceparent: tp });
    const row = await t.db.selectFrom('notifications').select('traceparent').where('id', '=', n.id).executeTakeFirstOrThrow();
    expect(row.traceparent).toBe(tp);
    expect((await outboxFor(n.id))[0]!.headers.traceparent).toBe(tp);
  });

  it('starts a new trace when the request has none, so one delivery is still one trace', async () => {
    const n = await create();
    const row = await t.db.selectFrom('notifications').select('traceparent').where('id', '=', n.id).executeTakeFirstOrThrow();
    expect(row.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
  });

  it('200: the same Idempotency-Key with the same request returns the original', async () => {
    const first = await create({}, 'acme', { 'idempotency-key': 'order-1' });
    const res = await call('POST', '/v1/notifications', { body: webhook(), headers: { 'idempotency-key': 'order-1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('location')).toBe(`/v1/notifications/${first.id}`);
    expect(NotificationView.parse(await res.json())).toEqual(first);
    expect(await outboxFor(first.id)).toHaveLength(2);
  });

  it('keys are per tenant: another tenant may use the same key', async () => {
    const a = await create({}, 'acme', { 'idempotency-key': 'shared-key' });
    const b = await create({}, 'globex', { 'idempotency-key': 'shared-key' });
    expect(b.id).not.toBe(a.id);
  });

  it('422 idempotency_conflict: the same key with a different request', async () => {
    const first = await create({}, 'acme', { 'idempotency-key': 'order-2' });
    const res = await call('POST', '/v1/notifications', {
      body: webhook({ body: 'something else' }),
      headers: { 'idempotency-key': 'order-2' },
    });
    const p = await expectProblem(res, 'idempotency_conflict');
    expect(p.existing_id).toBe(first.id);
  });

  it('exactly one 202 for concurrent identical POSTs with one key', async () => {
    clock.advance(1);
    const responses = await Promise.all(
      Array.from({ length: 16 }, async () =>
        call('POST', '/v1/notifications', { body: webhook(), headers: { 'idempotency-key': 'burst-1' } }),
      ),
    );
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 202)).toHaveLength(1);
    expect(statuses.filter((s) => s === 200)).toHaveLength(15);
    const ids = new Set(await Promise.all(responses.map(async (r) => ((await r.json()) as { id: string }).id)));
    expect(ids.size).toBe(1);
    const rows = await t.db.selectFrom('notifications').select('id').where('idempotency_key', '=', 'burst-1').execute();
    expect(rows).toHaveLength(1);
    expect(await outboxFor(rows[0]!.id)).toHaveLength(2);
  });

  it('422 unknown_channel', async () => {
    const res = await call('POST', '/v1/notifications', { body: webhook({ channel: 'pager' }) });
    const p = await expectProblem(res, 'unknown_channel');
    expect(p.errors).toEqual([{ path: 'channel', message: expect.stringContaining('email, sms, webhook') }]);
  });

  it('422 validation_failed lists every missing field', async () => {
    const res = await call('POST', '/v1/notifications', { body: { body: 'x' } });
    const p = await expectProblem(res, 'validation_failed');
    expect(p.errors?.map((e) => e.path).sort()).toEqual(['channel', 'to']);
  });

  it('422 validation_failed for an unknown field (a typo is not ignored)', async () => {
    const res = await call('POST', '/v1/notifications', { body: webhook({ recipient: 'x', tenant_id: 'globex' }) });
    const p = await expectProblem(res, 'validation_failed');
    expect(JSON.stringify(p.errors)).toContain('recipient');
    expect(JSON.stringify(p.errors)).toContain('tenant_id');
  });

  it('422 validation_failed for an invalid recipient and for body plus template', async () => {
    const p = await expectProblem(
      await call('POST', '/v1/notifications', { body: webhook({ to: 'not a url', template: 'welcome' }) }),
      'validation_failed',
    );
    expect(p.errors?.map((e) => e.path).sort()).toEqual(['body', 'to']);
  });

  it('422 validation_failed for a body that is not an object', async () => {
    const p = await expectProblem(await call('POST', '/v1/notifications', { body: [webhook()] }), 'validation_failed');
    expect(p.errors?.[0]?.path).toBe('(root)');
  });

  it('422 validation_failed for a bad Idempotency-Key header', async () => {
    const p = await expectProblem(
      await call('POST', '/v1/notifications', { body: webhook(), headers: { 'idempotency-key': 'k'.repeat(256) } }),
      'validation_failed',
    );
    expect(p.errors).toEqual([{ path: 'Idempotency-Key', message: expect.any(String) }]);
  });

  it("422 validation_failed for a bad Idempotency-Key names the body's issues too, in one answer", async () => {
    const p = await expectProblem(
      await call('POST', '/v1/notifications', { body: webhook({ to: 'not a url' }), headers: { 'idempotency-key': 'héllo' } }),
      'validation_failed',
    );
    expect(p.errors?.map((e) => e.path)).toEqual(['Idempotency-Key', 'to']);
  });

  it('422 bad_expiry for an expiry in the past', async () => {
    const p = await expectProblem(
      await call('POST', '/v1/notifications', { body: webhook({ expires_at: '2020-01-01T00:00:00Z' }) }),
      'bad_expiry',
    );
    expect(p.errors?.[0]?.path).toBe('expires_at');
  });

  it('400 malformed_json', async () => {
    await expectProblem(
      await call('POST', '/v1/notifications', { raw: '{"channel":', headers: { 'content-type': 'application/json' } }),
      'malformed_json',
    );
  });

  it('413 payload_too_large above 64 KiB, and nothing is stored', async () => {
    const before = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .executeTakeFirstOrThrow();
    const raw = JSON.stringify(webhook({ body: 'x'.repeat(64 * 1024) }));
    const p = await expectProblem(
      await call('POST', '/v1/notifications', {
        raw,
        headers: { 'content-type': 'application/json', 'content-length': String(raw.length) },
      }),
      'payload_too_large',
    );
    expect(p.detail).toContain('65536');
    const after = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .executeTakeFirstOrThrow();
    expect(after.c).toBe(before.c);
  });

  it('415 unsupported_media_type for a non-JSON body', async () => {
    const res = await call('POST', '/v1/notifications', {
      raw: 'channel=webhook',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    await expectProblem(res, 'unsupported_media_type');
  });
});

describe('authentication', () => {
  it.each([
    ['no Authorization header', null, {}],
    ['a wrong key', null, { authorization: 'Bearer nk_wrong' }],
    ['a Basic credential', null, { authorization: 'Basic YWRtaW46YWRtaW4=' }],
  ])('401 unauthorized with %s', async (_name, tenant, headers) => {
    const res = await call('GET', '/v1/notifications', { tenant, headers });
    await expectProblem(res, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
  });

  it('401 unauthorized for a revoked key, on every route', async () => {
    const n = await create();
    for (const [method, path] of [
      ['GET', '/v1/notifications'],
      ['GET', `/v1/notifications/${n.id}`],
      ['POST', `/v1/notifications/${n.id}/cancel`],
    ] as const) {
      const p = await expectProblem(await call(method, path, { tenant: 'revoked' }), 'unauthorized');
      expect(p.detail).toContain('revoked');
    }
    const p = await expectProblem(await call('POST', '/v1/notifications', { tenant: 'revoked', body: webhook() }), 'unauthorized');
    expect(p.detail).toContain('revoked');
  });

  it('401 comes before 415 and 413: an anonymous caller learns nothing about the body rules', async () => {
    await expectProblem(
      await call('POST', '/v1/notifications', { tenant: null, raw: 'x', headers: { 'content-type': 'text/plain' } }),
      'unauthorized',
    );
  });
});

describe('tenant isolation: another tenant’s id is 404, exactly like a missing one', () => {
  it.each([
    ['GET', ''],
    ['GET', '/attempts'],
    ['GET', '/actions'],
    ['POST', '/cancel'],
    ['POST', '/retry'],
  ])('%s /v1/notifications/{id}%s', async (method, suffix) => {
    const n = await create({}, 'acme');
    if (suffix === '/retry') await setState(n.id, 'dead');
    const foreign = await expectProblem(await call(method, `/v1/notifications/${n.id}${suffix}`, { tenant: 'globex' }), 'not_found');
    const missing = await expectProblem(
      await call(method, `/v1/notifications/ntf_01J00000000000000000000000${suffix}`, { tenant: 'globex' }),
      'not_found',
    );
    expect(foreign.detail.replace(n.id, 'X')).toBe(missing.detail.replace('ntf_01J00000000000000000000000', 'X'));
    // and nothing changed
    const row = await t.db.selectFrom('notifications').select('state').where('id', '=', n.id).executeTakeFirstOrThrow();
    expect(row.state).toBe(suffix === '/retry' ? 'dead' : 'queued');
  });

  it('lists show only the caller’s notifications', async () => {
    const mine = await create({ to: 'https://globex.example.com/only' }, 'globex');
    const acme = NotificationList.parse(await (await call('GET', '/v1/notifications?limit=100', { tenant: 'acme' })).json());
    expect(acme.data.map((n) => n.id)).not.toContain(mine.id);
    const globex = NotificationList.parse(await (await call('GET', '/v1/notifications?limit=100', { tenant: 'globex' })).json());
    expect(globex.data.map((n) => n.id)).toContain(mine.id);
    expect(globex.data.every((n) => n.to.includes('globex') || n.to === 'https://hooks.example.com/in')).toBe(true);
  });

  it('404 for an id that is not an id', async () => {
    await expectProblem(await call('GET', '/v1/notifications/../../etc'), 'not_found');
    await expectProblem(await call('GET', '/v1/notifications/ntf_lowercase'), 'not_found');
  });
});

describe('GET /v1/notifications/{id} and /attempts', () => {
  it('returns the notification with every documented field', async () => {
    const n = await create();
    const res = await call('GET', `/v1/notifications/${n.id}`);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(Object.keys(body as object).sort()).toEqual(
      [
        'attempts',
        'channel',
        'created_at',
        'dead_reason',
        'expires_at',
        'id',
        'last_error',
        'max_attempts',
        'metadata',
        'next_attempt_at',
        'ordering',
        'priority',
        'send_at',
        'sent_at',
        'state',
        'to',
        'updated_at',
      ].sort(),
    );
    expect(NotificationView.parse(body)).toEqual(n);
  });

  it('returns the attempt history in order', async () => {
    const n = await create();
    const started = clock.now();
    await t.db
      .insertInto('attempts')
      .values([
        {
          notification_id: n.id,
          attempt: 2,
          started_at: started,
          finished_at: started,
          outcome: 'sent',
          error: null,
          provider_status: '200',
        },
        {
          notification_id: n.id,
          attempt: 1,
          started_at: started,
          finished_at: started,
          outcome: 'transient',
          error: 'HTTP 503',
          provider_status: '503',
        },
      ])
      .execute();
    const res = await call('GET', `/v1/notifications/${n.id}/attempts`);
    expect(res.status).toBe(200);
    const list = AttemptList.parse(await res.json());
    expect(list.data).toEqual([
      {
        attempt: 1,
        started_at: started.toISOString(),
        finished_at: started.toISOString(),
        outcome: 'transient',
        error: 'HTTP 503',
        provider_status: '503',
        provider: null,
      },
      {
        attempt: 2,
        started_at: started.toISOString(),
        finished_at: started.toISOString(),
        outcome: 'sent',
        error: null,
        provider_status: '200',
        provider: null,
      },
    ]);
  });
});

describe('GET /v1/notifications (list)', () => {
  it('pages newest first with a cursor, without gaps or repeats', async () => {
    const to = 'https://pages.example.com/hook';
    const created: string[] = [];
    for (let i = 0; i < 5; i++) created.push((await create({ to })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const qs: string = `to=${encodeURIComponent(to)}&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await call('GET', `/v1/notifications?${qs}`);
      expect(res.status).toBe(200);
      const page = NotificationList.parse(await res.json());
      expect(page.data.length).toBeLessThanOrEqual(2);
      seen.push(...page.data.map((n) => n.id));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual([...created].reverse());
    expect(pages).toBe(3);
  });

  it('filters by state', async () => {
    const to = 'https://state.example.com/hook';
    const a = await create({ to });
    const b = await create({ to });
    await setState(a.id, 'sent');
    const res = await call('GET', `/v1/notifications?state=sent&to=${encodeURIComponent(to)}`);
    const page = NotificationList.parse(await res.json());
    expect(page.data.map((n) => n.id)).toEqual([a.id]);
    expect(page.next_cursor).toBeNull();
    const queued = NotificationList.parse(await (await call('GET', `/v1/notifications?state=queued&to=${encodeURIComponent(to)}`)).json());
    expect(queued.data.map((n) => n.id)).toEqual([b.id]);
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=ten', 'limit'],
    ['state=pending', 'state'],
    ['cursor=bm9wZQ', 'cursor'],
    ['colour=blue', 'colour'],
  ])('400 invalid_query for %s', async (qs, path) => {
    const p = await expectProblem(await call('GET', `/v1/notifications?${qs}`), 'invalid_query');
    expect(p.errors?.[0]?.path).toBe(path);
  });

  it.each([
    ['dead_reason=gone', 'dead_reason'],
    ['last_error_prefix=HTTP%20410', 'last_error_prefix'],
    ['has_last_error=false', 'has_last_error'],
    ['dead_reason=permanent&has_last_error=no', 'has_last_error'],
    ['dead_reason=permanent&has_last_error=false&last_error_prefix=HTTP%20410', 'has_last_error'],
    ['dead_reason=permanent&state=queued', 'state'],
    [`dead_reason=permanent&last_error_prefix=${'x'.repeat(201)}`, 'last_error_prefix'],
    ['dead_reason=permanent&dead_reason=exhausted', 'dead_reason'],
  ])('400 invalid_query for the dead-group filter %s', async (qs, path) => {
    const p = await expectProblem(await call('GET', `/v1/notifications?${qs}`), 'invalid_query');
    expect(p.errors?.map((e) => e.path)).toEqual([path]);
  });

  it('says why the last-error filters need a dead reason', async () => {
    const p = await expectProblem(await call('GET', '/v1/notifications?last_error_prefix=x&has_last_error=true'), 'invalid_query');
    expect(p.errors).toEqual([
      { path: 'last_error_prefix', message: 'needs a dead reason (dead_reason): it selects among the dead notifications of one reason' },
      { path: 'has_last_error', message: 'needs a dead reason (dead_reason): it selects among the dead notifications of one reason' },
    ]);
  });

  it('filters by dead reason and last error: dead ones only, the error exactly (not a prefix pattern)', async () => {
    const to = 'https://dead-filter.example.com/hook';
    const [a, b, c] = [await create({ to }), await create({ to }), await create({ to })];
    await setState(a.id, 'dead', { dead_reason: 'permanent', last_error: 'HTTP 410' });
    await setState(b.id, 'dead', { dead_reason: 'permanent', last_error: 'HTTP 410 Gone' });
    await t.db.updateTable('notifications').set({ last_error: 'HTTP 410' }).where('id', '=', c.id).execute();
    const list = async (qs: string) =>
      NotificationList.parse(await (await call('GET', `/v1/notifications?to=${encodeURIComponent(to)}&${qs}`)).json()).data.map(
        (n) => n.id,
      );
    expect(await list('dead_reason=permanent')).toEqual([b.id, a.id]);
    expect(await list('dead_reason=permanent&last_error_prefix=HTTP%20410')).toEqual([a.id]);
    expect(await list('dead_reason=permanent&state=dead&last_error_prefix=HTTP%25')).toEqual([]);
    expect(await list('dead_reason=exhausted')).toEqual([]);
    expect(await list('dead_reason=permanent&has_last_error=false')).toEqual([]);
  });

  it('refuses a number JSON cannot carry (1e999 is Infinity once parsed) instead of storing null', async () => {
    const res = await call('POST', '/v1/notifications', {
      raw: '{"channel":"webhook","to":"https://hooks.example.com/inf","body":"x","data":{"n":1e999}}',
      headers: { 'content-type': 'application/json' },
    });
    const p = await expectProblem(res, 'validation_failed');
    expect(p.errors).toEqual([{ path: 'data.n', message: 'must be a finite number (JSON has no Infinity or NaN)' }]);
  });

  it('answers a value PostgreSQL cannot store (U+0000) with 400 unstorable_text, not a 500', async () => {
    const p = await expectProblem(await call('GET', '/v1/notifications?to=a%00b'), 'unstorable_text');
    expect(p.status).toBe(400);
  });

  it.each(['limit=0', 'limit=101', 'limit=ten', 'limit=2.5', 'limit='])('names the range of limit, in words, for %s', async (qs) => {
    const p = await expectProblem(await call('GET', `/v1/notifications?${qs}`), 'invalid_query');
    expect(p.errors).toEqual([{ path: 'limit', message: 'must be a whole number from 1 to 100' }]);
  });
});

describe('POST /v1/notifications/{id}/cancel', () => {
  it('cancels a queued notification with its status event and a history row, in one transaction', async () => {
    const n = await create();
    clock.advance(1000);
    const res = await call('POST', `/v1/notifications/${n.id}/cancel`);
    expect(res.status).toBe(200);
    expect(NotificationView.parse(await res.json())).toMatchObject({
      id: n.id,
      state: 'cancelled',
      next_attempt_at: null,
      updated_at: clock.now().toISOString(),
    });
    const rows = await outboxFor(n.id);
    expect(rows.map((r) => r.topic)).toEqual(['requests', 'events', 'events']);
    expect(parseStatusEvent(rows[2]!.value)).toMatchObject({ ok: true, message: { type: 'notification.cancelled', state: 'cancelled' } });
    const actions = ActionList.parse(await (await call('GET', `/v1/notifications/${n.id}/actions`)).json());
    expect(actions.data).toEqual([
      {
        action: 'cancel',
        from_state: 'queued',
        to_state: 'cancelled',
        previous_dead_reason: null,
        attempts: 0,
        max_attempts: BUDGET,
        api_key_id: keyIds.acme,
        occurred_at: clock.now().toISOString(),
      },
    ]);
  });

  it('is idempotent: cancelling again returns it unchanged and records nothing more', async () => {
    const n = await create();
    expect((await call('POST', `/v1/notifications/${n.id}/cancel`)).status).toBe(200);
    const again = await call('POST', `/v1/notifications/${n.id}/cancel`);
    expect(again.status).toBe(200);
    expect(((await again.json()) as { state: string }).state).toBe('cancelled');
    expect(await outboxFor(n.id)).toHaveLength(3);
    expect(ActionList.parse(await (await call('GET', `/v1/notifications/${n.id}/actions`)).json()).data).toHaveLength(1);
  });

  it('409 invalid_transition for a sent notification', async () => {
    const n = await create();
    await setState(n.id, 'sent');
    const p = await expectProblem(await call('POST', `/v1/notifications/${n.id}/cancel`), 'invalid_transition');
    expect(p.detail).toContain('sent');
    expect(await outboxFor(n.id)).toHaveLength(2);
  });
});

describe('POST /v1/notifications/{id}/retry', () => {
  it('re-queues a dead notification: raises max_attempts by the budget, writes the next delivery request and the requeued event, records it', async () => {
    const n = await create();
    await setState(n.id, 'dead');
    clock.advance(5000);
    const res = await call('POST', `/v1/notifications/${n.id}/retry`);
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(`/v1/notifications/${n.id}`);
    expect(NotificationView.parse(await res.json())).toMatchObject({
      state: 'queued',
      dead_reason: null,
      attempts: BUDGET,
      max_attempts: BUDGET * 2,
      last_error: 'provider returned 503',
      next_attempt_at: clock.now().toISOString(),
    });
    const rows = await outboxFor(n.id);
    expect(rows.map((r) => r.topic)).toEqual(['requests', 'events', 'requests', 'events']);
    expect(parseDeliveryRequest(rows[2]!.value)).toMatchObject({
      ok: true,
      message: { attempt: BUDGET + 1, due_at: clock.now().toISOString() },
    });
    expect(parseStatusEvent(rows[3]!.value)).toMatchObject({
      ok: true,
      message: { type: 'notification.requeued', state: 'queued', attempts: BUDGET },
    });
    const actions = ActionList.parse(await (await call('GET', `/v1/notifications/${n.id}/actions`)).json());
    expect(actions.data).toEqual([
      expect.objectContaining({
        action: 'retry',
        from_state: 'dead',
        to_state: 'queued',
        previous_dead_reason: 'exhausted',
        attempts: BUDGET,
        max_attempts: BUDGET * 2,
      }),
    ]);
  });

  it('409 invalid_transition for a queued notification', async () => {
    const n = await create();
    const p = await expectProblem(await call('POST', `/v1/notifications/${n.id}/retry`), 'invalid_transition');
    expect(p.detail).toContain('only dead notifications');
  });

  it('409 notification_expired when its expiry has passed', async () => {
    const n = await create({ ttl_seconds: 60 });
    await setState(n.id, 'dead', { dead_reason: 'expired' });
    clock.advance(61_000);
    await expectProblem(await call('POST', `/v1/notifications/${n.id}/retry`), 'notification_expired');
    const row = await t.db.selectFrom('notifications').select('state').where('id', '=', n.id).executeTakeFirstOrThrow();
    expect(row.state).toBe('dead');
  });
});

describe('operations and documents', () => {
  it('GET /healthz is 200 without a key (admin app)', async () => {
    const res = await admin.request('/healthz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
  });

  it('GET /readyz is 200 when the database answers (admin app)', async () => {
    const res = await admin.request('/readyz');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', checks: { database: 'ok' } });
  });

  it('GET /readyz is a 503 problem naming the failed check', async () => {
    const failing = createAdminApp({
      metrics: createMetrics({ processMetrics: false }),
      readiness: { database: async () => {}, kafka: async () => Promise.reject(new Error('ECONNREFUSED')) },
    });
    const res = await failing.request('/readyz');
    const p = await expectProblem(res, 'not_ready');
    expect(p.checks).toEqual({ database: 'ok', kafka: 'unavailable' });
    expect(p.detail).toContain('kafka');
  });

  it('GET /metrics counts stored notifications by state and channel, and HTTP requests by route', async () => {
    const { c } = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .where('state', '=', 'queued')
      .where('channel', '=', 'webhook')
      .executeTakeFirstOrThrow();
    const res = await admin.request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    const text = await res.text();
    expect(text).toContain(`notify_notifications{state="queued",channel="webhook"} ${c}`);
    expect(text).toContain('notify_notifications{state="sent",channel="sms"} 0');
    expect(text).toMatch(/notify_oldest_queued_age_seconds\{channel="webhook"\} \d/);
    expect(text).toMatch(/notify_outbox_unpublished \d+/);
    expect(text).toMatch(/notify_http_requests_total\{method="POST",route="\/v1\/notifications",status="202"\} \d+/);
    expect(text).toMatch(/notify_http_requests_total\{method="GET",route="\/v1\/notifications\/:id",status="404"\} \d+/);
  });

  it('the public app serves no health, readiness or metrics: those are on the admin port', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) await expectProblem(await call('GET', path, { tenant: null }), 'not_found');
  });

  it('GET /openapi.json and /docs', async () => {
    const doc = await call('GET', '/openapi.json', { tenant: null });
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { openapi: string }).openapi).toBe('3.1.0');
    const html = await call('GET', '/docs', { tenant: null });
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toContain('text/html');
    // A page of its own: nothing runs in it, nothing frames it.
    expect(html.headers.get('content-security-policy')).toMatch(/^default-src 'none';.*frame-ancestors 'none'/);
    expect(html.headers.get('x-frame-options')).toBe('DENY');
    expect(html.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('unknown routes are a 404 problem', async () => {
    await expectProblem(await call('GET', '/v2/nothing', { tenant: null }), 'not_found');
  });

  it('echoes a sane X-Request-Id and makes one otherwise', async () => {
    expect((await call('GET', '/openapi.json', { headers: { 'x-request-id': 'abc-123' } })).headers.get('x-request-id')).toBe('abc-123');
    expect((await call('GET', '/openapi.json', { headers: { 'x-request-id': 'bad id with spaces' } })).headers.get('x-request-id')).toMatch(
      /^req_/,
    );
  });
});
