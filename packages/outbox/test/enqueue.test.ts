import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IdempotencyConflictError,
  ValidationError,
  enqueue,
  fromPgClient,
  parseDeliveryRequest,
  parseStatusEvent,
  type NotificationIntent,
} from '@notify/outbox';
import { ManualClock } from '@notify/outbox/testing';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const intent = (over: Partial<NotificationIntent> = {}): NotificationIntent => ({
  tenant_id: 'acme',
  channel: 'email',
  to: 'ada@example.com',
  subject: 'Hi',
  body: 'Welcome',
  ...over,
});

async function countFor(id: string) {
  const n = await t.db.selectFrom('notifications').select(sql<number>`count(*)::int`.as('c')).where('id', '=', id).executeTakeFirstOrThrow();
  const o = await t.db
    .selectFrom('outbox')
    .select(sql<number>`count(*)::int`.as('c'))
    .where(sql`headers->>'notification-id'`, '=', id)
    .executeTakeFirstOrThrow();
  return { notifications: n.c, outbox: o.c };
}

describe('enqueue in the caller transaction', () => {
  it('writes the queued notification and its outbox rows in a Kysely transaction', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const { notification, created } = await t.db.transaction().execute((trx) => enqueue(trx, intent(), { clock, maxAttempts: 4 }));
    expect(created).toBe(true);
    expect(notification).toMatchObject({
      tenant_id: 'acme',
      channel: 'email',
      recipient: 'ada@example.com',
      state: 'queued',
      attempts: 0,
      max_attempts: 4,
      dead_reason: null,
    });
    expect(notification.next_attempt_at).toEqual(clock.now());
    expect(notification.expires_at).toEqual(new Date('2026-05-02T12:00:00Z'));
    const rows = await t.db.selectFrom('outbox').selectAll().where(sql`headers->>'notification-id'`, '=', notification.id).orderBy('id').execute();
    expect(rows.map((r) => r.topic)).toEqual(['requests', 'events']);
    const request = parseDeliveryRequest(rows[0]!.value);
    expect(request).toEqual({ ok: true, message: expect.objectContaining({ id: notification.id, attempt: 1, due_at: '2026-05-01T12:00:00.000Z' }) });
    expect(parseStatusEvent(rows[1]!.value)).toEqual({ ok: true, message: expect.objectContaining({ type: 'notification.queued', state: 'queued' }) });
    expect(rows[0]!.value).not.toContain('Welcome'); // bodies stay in PostgreSQL
  });

  it('writes nothing when the Kysely transaction rolls back', async () => {
    let id = '';
    await expect(
      t.db.transaction().execute(async (trx) => {
        id = (await enqueue(trx, intent())).notification.id;
        throw new Error('business rule failed');
      }),
    ).rejects.toThrow('business rule failed');
    expect(await countFor(id)).toEqual({ notifications: 0, outbox: 0 });
  });

  it('works with a raw pg client inside BEGIN, and rolls back with it', async () => {
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const kept = await enqueue(client, intent({ to: 'raw@example.com' }));
      await client.query('COMMIT');
      expect(await countFor(kept.notification.id)).toEqual({ notifications: 1, outbox: 2 });

      await client.query('BEGIN');
      const dropped = await enqueue(fromPgClient(client), intent({ to: 'gone@example.com' }));
      await client.query('ROLLBACK');
      expect(await countFor(dropped.notification.id)).toEqual({ notifications: 0, outbox: 0 });
    } finally {
      client.release();
    }
  });

  it('throws typed validation errors and writes nothing', async () => {
    const before = await t.db.selectFrom('notifications').select(sql<number>`count(*)::int`.as('c')).executeTakeFirstOrThrow();
    await expect(t.db.transaction().execute((trx) => enqueue(trx, intent({ channel: 'pager' })))).rejects.toMatchObject({ code: 'unknown_channel' });
    await expect(t.db.transaction().execute((trx) => enqueue(trx, intent({ to: 'nope' })))).rejects.toBeInstanceOf(ValidationError);
    const after = await t.db.selectFrom('notifications').select(sql<number>`count(*)::int`.as('c')).executeTakeFirstOrThrow();
    expect(after.c).toBe(before.c);
  });
});

describe('idempotency', () => {
  it('returns the original with created=false for the same key and request', async () => {
    const first = await t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'welcome-1' })));
    const again = await t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'welcome-1' })));
    expect(again.created).toBe(false);
    expect(again.notification.id).toBe(first.notification.id);
    expect(await countFor(first.notification.id)).toEqual({ notifications: 1, outbox: 2 });
  });

  it('rejects the same key with a different request', async () => {
    const first = await t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'k-conflict' })));
    const err = await t.db
      .transaction()
      .execute((trx) => enqueue(trx, intent({ idempotency_key: 'k-conflict', body: 'Different' })))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(err).toMatchObject({ code: 'idempotency_conflict', existingId: first.notification.id });
  });

  it('scopes keys by tenant', async () => {
    const a = await t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'shared' })));
    const b = await t.db.transaction().execute((trx) => enqueue(trx, intent({ tenant_id: 'globex', idempotency_key: 'shared' })));
    expect(b.created).toBe(true);
    expect(b.notification.id).not.toBe(a.notification.id);
  });

  it('creates exactly one row when parallel transactions race on one key', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () => t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'race-1' })))),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.notification.id)).size).toBe(1);
    const rows = await t.db.selectFrom('notifications').select('id').where('idempotency_key', '=', 'race-1').execute();
    expect(rows).toHaveLength(1);
    expect(await countFor(rows[0]!.id)).toEqual({ notifications: 1, outbox: 2 });
  });

  it('a racing transaction that rolls back leaves the key free for the other', async () => {
    const c1 = await t.pool.connect();
    const c2 = await t.pool.connect();
    try {
      await c1.query('BEGIN');
      await c2.query('BEGIN');
      const first = await enqueue(c1, intent({ idempotency_key: 'race-rollback' }));
      const second = enqueue(c2, intent({ idempotency_key: 'race-rollback' })); // blocks on c1's row
      await c1.query('ROLLBACK');
      const won = await second;
      await c2.query('COMMIT');
      expect(won.created).toBe(true);
      expect(won.notification.id).not.toBe(first.notification.id);
    } finally {
      c1.release();
      c2.release();
    }
  });
});

describe('schema invariants', () => {
  it('refuses a sent row without sent_at (named CHECK)', async () => {
    const { notification } = await t.db.transaction().execute((trx) => enqueue(trx, intent()));
    await expect(
      t.db.updateTable('notifications').set({ state: 'sent', next_attempt_at: null }).where('id', '=', notification.id).execute(),
    ).rejects.toThrow(/notifications_sent_iff_sent_at/);
    await expect(
      t.db.updateTable('notifications').set({ state: 'dead', next_attempt_at: null }).where('id', '=', notification.id).execute(),
    ).rejects.toThrow(/notifications_dead_iff_reason/);
  });
});
