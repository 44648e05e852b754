import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { PROBLEM_CATALOG, Problem, createApp } from '@notify/api';
import { fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { allStoredText } from '../../../test/support/chaos/tenants.js';
import { ErasureView } from '../src/erasure-schemas.js';
import { seedTenantKeys } from './support.js';

// POST /v1/erasures against the real PostgreSQL: after it, the address is stored nowhere (every
// text column of every table is searched), ids, states and times are kept, queued notifications
// are cancelled, other tenants are untouched, and a repeat answers 0.

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'));
let keys: Record<'acme' | 'globex', string>;

beforeAll(async () => {
  t = await createTestDatabase();
  keys = await seedTenantKeys(t, ['acme', 'globex'], clock.now());
  app = createApp({ db: t.db, clock, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } } });
});
afterAll(async () => {
  await t?.close();
});

function call(method: string, path: string, body: unknown, tenant: keyof typeof keys = 'acme', extra: Record<string, string> = {}) {
  return app.request(path, {
    method,
    headers: { authorization: `Bearer ${keys[tenant]}`, 'content-type': 'application/json', ...extra },
    body: JSON.stringify(body),
  });
}

async function enqueue(tenant: keyof typeof keys, to: string, key: string): Promise<string> {
  const request = { channel: 'email', to, subject: `Welcome ${to}`, body: `Hi, your address is ${to}`, metadata: { user: to } };
  const res = await call('POST', '/v1/notifications', request, tenant, { 'idempotency-key': key });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function occurrences(needle: string): Promise<string[]> {
  return (await allStoredText(fromKysely(t.db))).filter((v) => v.toLowerCase().includes(needle.toLowerCase()));
}

describe('POST /v1/erasures', () => {
  it('removes the address and content from every stored row, keeps ids, states and times, cancels what is queued', async () => {
    const address = 'Ada.Lovelace@Example.com';
    const queued = await enqueue('acme', address, 'welcome-ada');
    const dead = await enqueue('acme', address.toLowerCase(), 'second-ada');
    const other = await enqueue('acme', 'bob@example.com', 'welcome-bob');
    // The second one died on an SMTP answer that quotes the address; its event and a callback quote it too.
    await t.pool.query(
      `UPDATE notifications SET state = 'dead', dead_reason = 'permanent', attempts = 1, next_attempt_at = NULL,
              last_error = $2, updated_at = now() WHERE id = $1`,
      [dead, `SMTP 550: <${address}> unknown`],
    );
    await t.pool.query(
      `INSERT INTO attempts (notification_id, attempt, started_at, finished_at, outcome, error, provider_status)
       VALUES ($1, 1, now(), now(), 'permanent', $2, $3)`,
      [dead, `SMTP 550: <${address}> unknown`, `550 5.1.1 <${address.toLowerCase()}>`],
    );
    const event = `{"v":1,"type":"notification.dead","id":"${dead}","last_error":"SMTP 550: <${address}> unknown"}`;
    await t.pool.query(`INSERT INTO outbox (topic, key, value, headers) VALUES ('events', 'k', $1, $2)`, [
      event,
      { 'notification-id': dead },
    ]);
    await t.pool.query(
      `INSERT INTO outbox_refused (outbox_id, topic, key, value, headers, notification_id, reason, refused_at)
       VALUES (99, 'events', 'k', $1, '{}', $2, 'message_too_large', now())`,
      [event, dead],
    );
    await t.pool.query(
      `INSERT INTO callback_deliveries (tenant_id, event_id, notification_id, event_type, payload, state, created_at, updated_at)
       VALUES ('acme', 'e1', $1, 'notification.dead', $2, 'failed', now(), now())`,
      [dead, event],
    );
    await t.pool.query(
      `INSERT INTO bulk_retries (id, tenant_id, filter, requeued, matched, created_at) VALUES ('blk_1', 'acme', $1, 0, 0, now())`,
      [{ to: address }],
    );
    expect((await call('POST', '/v1/suppressions', { channel: 'email', to: address })).status).toBe(201);
    const before = await t.pool.query('SELECT id, state, created_at FROM notifications ORDER BY id');
    expect((await occurrences(address)).length).toBeGreaterThan(5);

    const res = await call('POST', '/v1/erasures', { to: ` ${address.toUpperCase()} `, delete_suppressions: true });
    expect(res.status).toBe(200);
    const answer = ErasureView.parse(await res.json());
    expect(answer).toMatchObject({
      erased: 2,
      cancelled: 1,
      notifications: 2,
      attempts: 1,
      outbox_rows: 1,
      refused_rows: 1,
      callback_deliveries: 1,
      bulk_retries: 1,
      suppressions_deleted: 1,
      suppressions_kept: 0,
    });
    expect(answer.id).toMatch(/^ers_/);

    // Stored nowhere any more, in any text column of any table; Bob's notification is untouched.
    expect(await occurrences(address)).toEqual([]);
    expect(await occurrences('bob@example.com')).not.toEqual([]);
    const after = await t.pool.query(
      'SELECT id, state, created_at, recipient, subject, body, data, metadata FROM notifications ORDER BY id',
    );
    expect(after.rows.map((r) => r.id)).toEqual(before.rows.map((r) => r.id));
    const byId = new Map(after.rows.map((r) => [r.id as string, r]));
    expect(byId.get(queued)).toMatchObject({
      state: 'cancelled',
      recipient: '[erased]',
      subject: null,
      body: '',
      data: null,
      metadata: {},
    });
    expect(byId.get(dead)).toMatchObject({ state: 'dead', recipient: '[erased]' });
    expect(byId.get(other)).toMatchObject({ state: 'queued', recipient: 'bob@example.com' });
    // The cancel is recorded like a manual one, with its event.
    const actions = await t.pool.query('SELECT action, api_key_id FROM notification_actions WHERE notification_id = $1', [queued]);
    expect(actions.rows).toEqual([{ action: 'cancel', api_key_id: expect.any(String) }]);
    const events = await t.pool.query(
      `SELECT value FROM outbox WHERE topic = 'events' AND headers->>'message-type' = 'notification.cancelled'`,
    );
    expect(events.rows.map((r) => JSON.parse(r.value as string).id)).toEqual([queued]);
    // The audit record keeps the hash, not the address.
    const audit = await t.pool.query('SELECT tenant_id, recipient_sha256 FROM erasures');
    expect(audit.rows).toEqual([{ tenant_id: 'acme', recipient_sha256: answer.recipient_sha256 }]);

    // Idempotent: nothing left to erase.
    const again = ErasureView.parse(await (await call('POST', '/v1/erasures', { to: address })).json());
    expect(again).toMatchObject({ erased: 0, cancelled: 0, attempts: 0, suppressions_kept: 0 });
    // Repeating the original request with its Idempotency-Key cannot send it again: a conflict.
    const replay = await call(
      'POST',
      '/v1/notifications',
      { channel: 'email', to: address, subject: `Welcome ${address}`, body: `Hi, your address is ${address}`, metadata: { user: address } },
      'acme',
      { 'idempotency-key': 'welcome-ada' },
    );
    expect(replay.status).toBe(422);
  });

  it('is scoped to the tenant and keeps opt-outs unless asked', async () => {
    const address = 'carol@example.com';
    const mine = await enqueue('acme', address, 'carol-1');
    const theirs = await enqueue('globex', address, 'carol-1');
    expect((await call('POST', '/v1/suppressions', { channel: 'email', to: address })).status).toBe(201);
    const answer = ErasureView.parse(await (await call('POST', '/v1/erasures', { to: address })).json());
    expect(answer).toMatchObject({ erased: 1, cancelled: 1, suppressions_deleted: 0, suppressions_kept: 1 });
    const { rows } = await t.pool.query('SELECT id, recipient, state FROM notifications WHERE id = ANY($1) ORDER BY tenant_id', [
      [mine, theirs],
    ]);
    expect(rows).toEqual([
      { id: mine, recipient: '[erased]', state: 'cancelled' },
      { id: theirs, recipient: address, state: 'queued' },
    ]);
  });

  it('refuses a malformed request with problem+json', async () => {
    for (const body of [{}, { to: '' }, { to: 'a@b.c', extra: 1 }, { to: 'a@b.c', delete_suppressions: 'yes' }]) {
      const res = await call('POST', '/v1/erasures', body);
      expect(res.status).toBe(PROBLEM_CATALOG.validation_failed.status);
      expect(Problem.parse(await res.json()).code).toBe('validation_failed');
    }
  });
});
