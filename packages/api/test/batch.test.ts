import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { BatchResponse, NotificationView, Problem, createApp, generateApiKey, hashApiKey } from '@notify/api';
import { fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { apiKeyInsert } from '../src/sql/api-key-insert.js';

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let key = '';
const clock = new ManualClock(new Date('2026-05-01T12:00:00Z'));

beforeAll(async () => {
  t = await createTestDatabase();
  const k = generateApiKey();
  await apiKeyInsert(fromKysely(t.db), { id: k.id, tenantId: 'acme', keyHash: hashApiKey(k.key), name: 'acme', now: clock.now() });
  key = k.key;
  app = createApp({ db: t.db, clock, config: { retry: { maxAttempts: 4, defaultTtlMs: 3_600_000 } } });
});
afterAll(async () => {
  await t?.close();
});

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return app.request(path, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const item = (over: Record<string, unknown> = {}) => ({ channel: 'email', to: 'ada@example.com', body: 'hello', ...over });

describe('POST /v1/notifications with send_at', () => {
  it('answers queued with next_attempt_at = send_at, and the notification can be cancelled until then', async () => {
    clock.advance(1);
    const res = await post('/v1/notifications', item({ send_at: '2026-05-02T09:30:00+02:00' }));
    expect(res.status).toBe(202);
    const n = NotificationView.parse(await res.json());
    expect(n).toMatchObject({ state: 'queued', next_attempt_at: '2026-05-02T07:30:00.000Z', send_at: '2026-05-02T07:30:00.000Z' });
    const cancelled = await post(`/v1/notifications/${n.id}/cancel`, {});
    expect(cancelled.status).toBe(200);
    expect(NotificationView.parse(await cancelled.json())).toMatchObject({ state: 'cancelled', next_attempt_at: null });
  });

  it('refuses send_at beyond 30 days as problem+json', async () => {
    const res = await post('/v1/notifications', item({ send_at: '2026-07-01T00:00:00Z' }));
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(Problem.parse(await res.json())).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: 'send_at', message: 'must be at most 30 days ahead' }],
    });
  });
});

describe('POST /v1/notifications/batch', () => {
  it('answers one result per item, in order; an invalid item fails only itself', async () => {
    clock.advance(1);
    const res = await post('/v1/notifications/batch', {
      items: [
        item({ idempotency_key: 'b-1' }),
        item({ to: 'nope' }),
        'not an object',
        item({ tenant_id: 'globex' }),
        item({ send_at: '2026-05-01T13:00:00Z' }),
      ],
    });
    expect(res.status).toBe(200);
    const body = BatchResponse.parse(await res.json());
    expect(body.items.map((i) => i.status)).toEqual([202, 422, 422, 422, 202]);
    expect(body.items[1]).toMatchObject({ problem: { code: 'validation_failed', errors: [{ path: 'to' }] } });
    expect(body.items[3]).toMatchObject({ problem: { code: 'validation_failed', errors: [{ path: 'tenant_id' }] } });
    const first = body.items[0] as { id: string };
    const again = BatchResponse.parse(await (await post('/v1/notifications/batch', { items: [item({ idempotency_key: 'b-1' })] })).json());
    expect(again.items).toEqual([{ status: 200, id: first.id }]);
    const conflict = BatchResponse.parse(
      await (await post('/v1/notifications/batch', { items: [item({ idempotency_key: 'b-1', body: 'other' })] })).json(),
    );
    expect(conflict.items[0]).toMatchObject({ status: 422, problem: { code: 'idempotency_conflict', existing_id: first.id } });
  });

  it("holds an item's idempotency_key to the Idempotency-Key header's rule: 1 to 255 printable ASCII characters", async () => {
    const res = await post('/v1/notifications/batch', {
      items: [
        item({ idempotency_key: 'héllo' }),
        item({ idempotency_key: 'line\nbreak' }),
        item({ idempotency_key: 'a\u0001b', tenant_id: 'globex' }),
        item({ idempotency_key: 'plain ascii, with spaces ~' }),
      ],
    });
    const body = BatchResponse.parse(await res.json());
    expect(body.items.map((i) => i.status)).toEqual([422, 422, 422, 202]);
    expect(body.items[0]).toMatchObject({ problem: { code: 'validation_failed', errors: [{ path: 'idempotency_key' }] } });
    expect(body.items[2]).toMatchObject({ problem: { errors: [{ path: 'tenant_id' }, { path: 'idempotency_key' }] } });
    const { rows } = await t.pool.query("SELECT count(*)::int AS n FROM notifications WHERE idempotency_key ~ '[^ -~]'");
    expect(rows[0].n).toBe(0);
  });

  it('atomic: one refused item refuses the batch (422 batch_refused) and queues nothing', async () => {
    const count = async () =>
      (
        await t.db
          .selectFrom('notifications')
          .select(sql<number>`count(*)::int`.as('c'))
          .executeTakeFirstOrThrow()
      ).c;
    const before = await count();
    const res = await post('/v1/notifications/batch', { atomic: true, items: [item(), item({ channel: 'pigeon' }), item()] });
    expect(res.status).toBe(422);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    const problem = Problem.parse(await res.json());
    expect(problem).toMatchObject({ code: 'batch_refused', items: [{ index: 1, problem: { code: 'unknown_channel' } }] });
    expect(await count()).toBe(before);
    const ok = BatchResponse.parse(await (await post('/v1/notifications/batch', { atomic: true, items: [item(), item()] })).json());
    expect(ok.items.map((i) => i.status)).toEqual([202, 202]);
    expect(await count()).toBe(before + 2);
  });

  it('refuses a malformed envelope: no items, too many, unknown keys, an Idempotency-Key header', async () => {
    for (const [body, headers, path] of [
      [{ items: [] }, {}, 'items'],
      [{ items: Array.from({ length: 1001 }, () => item()) }, {}, 'items'],
      [{ items: [item()], extra: 1 }, {}, 'extra'],
      [{ items: [item()], atomic: 'yes' }, {}, 'atomic'],
      [{ items: [item()] }, { 'idempotency-key': 'k' }, 'Idempotency-Key'],
    ] as const) {
      const res = await post('/v1/notifications/batch', body, headers);
      expect(res.status).toBe(422);
      expect(Problem.parse(await res.json()).errors?.map((e) => e.path)).toContain(path);
    }
  });
});
