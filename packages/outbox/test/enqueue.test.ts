import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The modules themselves rather than '@notify/outbox': this file tests enqueue, not the export list.
import { parseDeliveryRequest, parseStatusEvent } from '@notify/contract';
import { fromPgClient } from '../src/db/executor.js';
import { enqueue } from '../src/enqueue.js';
import { enqueueMany } from '../src/enqueue-many.js';
import { IdempotencyConflictError, IdempotencyInProgressError, ValidationError } from '../src/errors.js';
import type { NotificationIntent } from '../src/model/intent.js';
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
  const n = await t.db
    .selectFrom('notifications')
    .select(sql<number>`count(*)::int`.as('c'))
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
  const o = await t.db
    .selectFrom('outbox')
    .select(sql<number>`count(*)::int`.as('c'))
    .where(sql`headers->>'notification-id'`, '=', id)
    .executeTakeFirstOrThrow();
  return { notifications: n.c, outbox: o.c };
}

/** The notification's row as PostgreSQL stores it (undefined when there is none). */
const stored = async (id: string) => (await t.pool.query('SELECT * FROM notifications WHERE id = $1', [id])).rows[0] as unknown;

describe('enqueue in the caller transaction', () => {
  it('writes the queued notification and its outbox rows in a Kysely transaction', async () => {
    const now = new Date('2026-05-01T12:00:00Z');
    const { notification, created } = await t.db.transaction().execute((trx) => enqueue(trx, intent(), { now, maxAttempts: 4 }));
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
    expect(notification.next_attempt_at).toEqual(now);
    expect(notification.expires_at).toEqual(new Date('2026-05-02T12:00:00Z'));
    const rows = await t.db
      .selectFrom('outbox')
      .selectAll()
      .where(sql`headers->>'notification-id'`, '=', notification.id)
      .orderBy('id')
      .execute();
    // One row: the delivery request, carrying the queued event the relay publishes after it (0150).
    expect(rows.map((r) => r.topic)).toEqual(['requests']);
    const request = parseDeliveryRequest(rows[0]!.value);
    expect(request).toEqual({
      ok: true,
      message: expect.objectContaining({ id: notification.id, attempt: 1, due_at: '2026-05-01T12:00:00.000Z' }),
    });
    expect(parseStatusEvent(rows[0]!.event_value)).toEqual({
      ok: true,
      message: expect.objectContaining({ type: 'notification.queued', state: 'queued' }),
    });
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
      expect(await countFor(kept.notification.id)).toEqual({ notifications: 1, outbox: 1 });

      await client.query('BEGIN');
      const dropped = await enqueue(fromPgClient(client), intent({ to: 'gone@example.com' }));
      await client.query('ROLLBACK');
      expect(await countFor(dropped.notification.id)).toEqual({ notifications: 0, outbox: 0 });
    } finally {
      client.release();
    }
  });

  it('throws typed validation errors and writes nothing', async () => {
    const before = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .executeTakeFirstOrThrow();
    await expect(t.db.transaction().execute((trx) => enqueue(trx, intent({ channel: 'pager' })))).rejects.toMatchObject({
      code: 'unknown_channel',
    });
    await expect(t.db.transaction().execute((trx) => enqueue(trx, intent({ to: 'nope' })))).rejects.toBeInstanceOf(ValidationError);
    const after = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .executeTakeFirstOrThrow();
    expect(after.c).toBe(before.c);
  });
});

describe('idempotency', () => {
  it('returns the original with created=false for the same key and request', async () => {
    const first = await t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'welcome-1' })));
    const again = await t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'welcome-1' })));
    expect(again.created).toBe(false);
    expect(again.notification.id).toBe(first.notification.id);
    expect(await countFor(first.notification.id)).toEqual({ notifications: 1, outbox: 1 });
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

  it('indexes keyed rows only (0290): keyless ones never conflict and cost the key index nothing', async () => {
    const keyless = await Promise.all([1, 2, 3].map(() => t.db.transaction().execute((trx) => enqueue(trx, intent()))));
    expect(new Set(keyless.map((r) => r.notification.id)).size).toBe(3);
    // The unique rule lives in a partial index; no index of notifications has every row's key.
    const { rows } = await sql<{ indexdef: string }>`
      SELECT indexdef FROM pg_indexes WHERE tablename = 'notifications' AND indexdef LIKE '%idempotency_key%'`.execute(t.db);
    expect(rows.map((r) => r.indexdef)).toEqual([
      'CREATE UNIQUE INDEX notifications_tenant_idempotency_key_idx ON public.notifications USING btree (tenant_id, idempotency_key) WHERE (idempotency_key IS NOT NULL)',
    ]);
  });

  it('creates exactly one row when parallel transactions race on one key', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () => t.db.transaction().execute((trx) => enqueue(trx, intent({ idempotency_key: 'race-1' })))),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.notification.id)).size).toBe(1);
    const rows = await t.db.selectFrom('notifications').select('id').where('idempotency_key', '=', 'race-1').execute();
    expect(rows).toHaveLength(1);
    expect(await countFor(rows[0]!.id)).toEqual({ notifications: 1, outbox: 1 });
  });

  it('repeats a key on a pg client whose statements were prepared before a migration added a column', async () => {
    const client = await t.pool.connect();
    try {
      const first = await enqueue(client, intent({ idempotency_key: 'before-migration' }));
      expect((await enqueue(client, intent({ idempotency_key: 'before-migration' }))).created).toBe(false); // prepared here
      await t.pool.query('ALTER TABLE notifications ADD COLUMN added_by_a_migration integer');
      try {
        // With SELECT * in the prepared read of the original: "cached plan must not change result type".
        const again = await enqueue(client, intent({ idempotency_key: 'before-migration' }));
        expect(again).toMatchObject({ created: false, notification: { id: first.notification.id, state: 'queued' } });
        expect((await enqueue(client, intent({ idempotency_key: 'after-migration' }))).created).toBe(true);
      } finally {
        await t.pool.query('ALTER TABLE notifications DROP COLUMN added_by_a_migration');
      }
      expect((await enqueue(client, intent({ idempotency_key: 'before-migration' }))).notification.id).toBe(first.notification.id);
    } finally {
      client.release();
    }
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

describe('idempotency under REPEATABLE READ', () => {
  it('a caller whose snapshot predates the key’s holder gets IdempotencyInProgressError (retry the transaction)', async () => {
    const late = await t.pool.connect();
    try {
      await late.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      await late.query('SELECT 1'); // the snapshot is taken here
      const holder = await enqueue(t.db, intent({ idempotency_key: 'rr-1' }));
      const err = await enqueue(late, intent({ idempotency_key: 'rr-1' })).catch((e: unknown) => e);
      await late.query('ROLLBACK');
      expect(err).toBeInstanceOf(IdempotencyInProgressError);
      expect((err as Error).cause).toMatchObject({ code: '40001' });
      // retried in a new transaction, it finds the original
      const retried = await enqueue(late, intent({ idempotency_key: 'rr-1' }));
      expect(retried).toMatchObject({ created: false, notification: { id: holder.notification.id } });
    } finally {
      late.release();
    }
  });
});

describe('schema invariants', () => {
  it('refuses a sent row without sent_at (named rule)', async () => {
    const { notification } = await t.db.transaction().execute((trx) => enqueue(trx, intent()));
    await expect(
      t.db.updateTable('notifications').set({ state: 'sent', next_attempt_at: null }).where('id', '=', notification.id).execute(),
    ).rejects.toThrow(/notifications_sent_iff_sent_at/);
    await expect(
      t.db.updateTable('notifications').set({ state: 'dead', next_attempt_at: null }).where('id', '=', notification.id).execute(),
    ).rejects.toThrow(/notifications_dead_iff_reason/);
  });

  // Since 0320 a BEFORE row trigger checks these seven, not table CHECKs: a client must see no difference.
  it.each([
    ['notifications_attempts_in_range', 'attempts = 9'],
    ['notifications_body_xor_template', "template = 'welcome'"],
    ['notifications_dead_iff_reason', "dead_reason = 'expired'"],
    ['notifications_held_is_scheduled', 'held_until = now()'],
    ['notifications_key_has_hash', "idempotency_key = 'k-1'"],
    ['notifications_queued_iff_next_attempt', 'next_attempt_at = NULL'],
    ['notifications_sent_iff_sent_at', 'sent_at = now()'],
  ])('refuses an UPDATE that breaks only %s, as a CHECK would, and keeps the row', async (name, set) => {
    const { notification } = await enqueue(t.db, intent({ body: 'secret body' }), { maxAttempts: 8 });
    const err = await t.pool.query(`UPDATE notifications SET ${set} WHERE id = $1`, [notification.id]).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: '23514',
      constraint: name,
      table: 'notifications',
      schema: 'public',
      message: `new row for relation "notifications" violates check constraint "${name}"`,
    });
    // No DETAIL with the failing row: it would carry the body into the caller's logs.
    expect((err as { detail?: string }).detail).toBeUndefined();
    expect(await stored(notification.id)).toEqual(notification);
  });

  it('refuses an INSERT that breaks one, names the first by name when several break, and leaves NULLs to NOT NULL', async () => {
    const { notification } = await enqueue(t.db, intent());
    const copy = (fields: Record<string, unknown>) =>
      t.pool
        .query('INSERT INTO notifications SELECT (json_populate_record(n, $2::json)).* FROM notifications n WHERE id = $1', [
          notification.id,
          JSON.stringify({ id: `ntf_copy_${Object.keys(fields).join('_')}`, ...fields }),
        ])
        .catch((e: unknown) => e);
    expect(await copy({ attempts: -1 })).toMatchObject({ code: '23514', constraint: 'notifications_attempts_in_range' });
    // sent with a next attempt and no sent_at breaks two: PostgreSQL applies CHECKs in name order.
    expect(await copy({ state: 'sent' })).toMatchObject({ code: '23514', constraint: 'notifications_queued_iff_next_attempt' });
    expect(await copy({ attempts: null })).toMatchObject({ code: '23502', column: 'attempts' });
    expect(await copy({ state: 'sent', next_attempt_at: null, sent_at: '2026-05-01T12:00:00Z' })).toMatchObject({ rowCount: 1 });
  });
});

describe('refusals come from PostgreSQL', () => {
  it('leave the caller’s transaction usable: a refused intent throws, the next one commits', async () => {
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      const before = await enqueue(client, intent({ to: 'usable-1@example.com' }));
      await expect(enqueue(client, intent({ to: 'nope' }))).rejects.toMatchObject({
        code: 'validation_failed',
        issues: [{ path: 'to', message: 'must be an email address' }],
      });
      await expect(enqueue(client, intent({ idempotency_key: 'usable-k' }))).resolves.toMatchObject({ created: true });
      await expect(enqueue(client, intent({ idempotency_key: 'usable-k', body: 'other' }))).rejects.toBeInstanceOf(
        IdempotencyConflictError,
      );
      const after = await enqueue(client, intent({ to: 'usable-2@example.com' }));
      await client.query('COMMIT');
      expect(await countFor(before.notification.id)).toEqual({ notifications: 1, outbox: 1 });
      expect(await countFor(after.notification.id)).toEqual({ notifications: 1, outbox: 1 });
    } finally {
      client.release();
    }
  });

  it('lists every field issue with today’s paths and messages', async () => {
    const err = (await enqueue(t.db, intent({ channel: 'sms', to: '12', subject: 'hi' })).catch((e: unknown) => e)) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.code).toBe('validation_failed');
    expect(err.message).toBe(
      'invalid notification: to: must be a phone number in E.164 form, e.g. +14155550100; subject: only the email channel has a subject',
    );
    expect(err.issues).toEqual([
      { path: 'to', message: 'must be a phone number in E.164 form, e.g. +14155550100' },
      { path: 'subject', message: 'only the email channel has a subject' },
    ]);
  });

  it('refuses what PostgreSQL cannot store (U+0000, lone surrogates, very deep data) as validation_failed with the path', async () => {
    const issue = async (i: NotificationIntent) => {
      const err = await enqueue(t.db, i).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (err === undefined) return undefined;
      expect(err).toBeInstanceOf(ValidationError);
      return (err as ValidationError).issues[0];
    };
    expect(await issue(intent({ body: 'a\u0000b' }))).toEqual({ path: 'body', message: expect.stringContaining('U+0000') });
    expect(await issue(intent({ subject: 'x\uD800' }))).toMatchObject({ path: 'subject' });
    expect(await issue(intent({ data: { ['k\u0000']: 1 } }))).toMatchObject({ path: 'data.k\u0000' });
    expect(await issue(intent({ metadata: { a: '\uDC00' } }))).toMatchObject({ path: 'metadata.a' });
    // JSON.stringify writes Infinity and NaN as null: refused, where they were stored as null (plain path and function path).
    const finite = { path: 'data.n', message: 'must be a finite number (JSON has no Infinity or NaN)' };
    expect(await issue(intent({ data: { n: Infinity } }))).toEqual(finite);
    expect(await issue(intent({ data: { n: Number.NaN }, idempotency_key: 'nan-data' }))).toEqual(finite);
    expect(await issue(intent({ data: { list: [1, { x: -Infinity }] } }))).toMatchObject({ path: 'data.list.1.x' });
    expect(await issue(intent({ ttl_seconds: Number.NaN }))).toMatchObject({ path: 'ttl_seconds' });
    expect(await issue(intent({ data: { when: new Date('2026-01-01T00:00:00Z'), n: 1.5e300 } }))).toBeUndefined();
    let deep: unknown = 'leaf';
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    expect(await issue(intent({ data: deep as Record<string, unknown> }))).toMatchObject({
      message: 'must not nest deeper than 32 levels',
    });
    let deeper: unknown = [];
    for (let i = 0; i < 40_000; i++) deeper = [deeper];
    expect(await issue(intent({ data: { x: deeper } }))).toMatchObject({
      path: expect.stringMatching(/^data\.x(\.0)+$/),
      message: 'must not nest deeper than 32 levels',
    });
    let ok: unknown = 'leaf';
    for (let i = 0; i < 30; i++) ok = [ok];
    expect(await issue(intent({ data: { ok }, body: 'paired 😀 surrogates are fine' }))).toBeUndefined();
    // A traceparent is never refused: one PostgreSQL cannot store is dropped like any malformed one.
    const { notification } = await enqueue(t.db, intent({ traceparent: '00-\u0000' }));
    expect(notification.traceparent).toBeNull();
  });

  it('keeps a well-formed traceparent and drops a malformed one', async () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect((await enqueue(t.db, intent({ traceparent: tp }))).notification.traceparent).toBe(tp);
    expect((await enqueue(t.db, intent({ traceparent: 'junk' }))).notification.traceparent).toBeNull();
  });

  it('keeps exactly the traceparents of the W3C form, without a regular expression (0270)', async () => {
    const form = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    // Every position changed to a character of each kind, one removed, one added, the dashes moved.
    const cases = [tp, tp.slice(1), `${tp}0`, `0${tp}`, tp.replace(/-/g, '0'), `${tp.slice(0, 54)}-`, tp.replace('-', '0-').slice(0, 55)];
    for (let i = 0; i < tp.length; i++) {
      for (const c of ['-', '0', 'f', 'a', 'g', 'A', 'F', ' ', 'é', '😀', '_', '%']) cases.push(tp.slice(0, i) + c + tp.slice(i + 1));
    }
    const results = await enqueueMany(
      t.db,
      cases.map((traceparent) => intent({ traceparent })),
    );
    expect(results.map((r) => (r.ok ? r.notification.traceparent : 'refused'))).toEqual(cases.map((c) => (form.test(c) ? c : null)));
    expect(results.filter((r) => r.ok && r.notification.traceparent !== null).length).toBeGreaterThan(tp.length);
  });
});

describe('defaults', () => {
  it('takes max_attempts and the default expiry from notify_settings, and now from the database clock', async () => {
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('UPDATE notify_settings SET max_attempts = 3, default_ttl_ms = 60000');
      const { rows } = await client.query<{ now: Date }>("SELECT date_trunc('milliseconds', statement_timestamp()) AS now");
      const { notification } = await enqueue(client, intent());
      await client.query('ROLLBACK');
      expect(notification.max_attempts).toBe(3);
      expect(notification.created_at.getTime()).toBeGreaterThanOrEqual(rows[0]!.now.getTime());
      expect(notification.created_at.getTime() % 1).toBe(0);
      expect(notification.expires_at.getTime() - notification.created_at.getTime()).toBe(60_000);
      expect(notification.next_attempt_at).toEqual(notification.created_at);
      expect(notification.updated_at).toEqual(notification.created_at);
    } finally {
      client.release();
    }
    const { notification } = await enqueue(t.db, intent());
    expect(notification.max_attempts).toBe(8);
    expect(notification.expires_at.getTime() - notification.created_at.getTime()).toBe(86_400_000);
  });

  it('truncates a given now to milliseconds and uses ttl_seconds and expires_at', async () => {
    const now = new Date('2026-05-01T12:00:00.123Z');
    const ttl = await enqueue(t.db, intent({ ttl_seconds: 90 }), { now });
    expect(ttl.notification.created_at).toEqual(now);
    expect(ttl.notification.expires_at).toEqual(new Date('2026-05-01T12:01:30.123Z'));
    const at = await enqueue(t.db, intent({ expires_at: '2026-05-01T14:00:00.98765+02:00' }), { now });
    expect(at.notification.expires_at).toEqual(new Date('2026-05-01T12:00:00.987Z'));
  });
});

describe('the returned notification', () => {
  // enqueue() rebuilds a created row from the intent and the columns PostgreSQL computed; it must
  // equal the row as stored, column for column, whatever the intent holds.

  it('is the stored row, for every kind of intent', async () => {
    const now = new Date('2026-05-01T12:00:00.123Z');
    const cases: NotificationIntent[] = [
      intent(),
      intent({ channel: 'sms', to: '+14155550100', subject: undefined, body: 'Code 1234', priority: 'high', ordering: 'strict' }),
      intent({
        channel: 'webhook',
        to: 'https://hooks.example.com/a?b=c',
        subject: undefined,
        body: undefined,
        template: 'order',
        template_version: 3,
      }),
      intent({
        body: undefined,
        template: 'welcome',
        data: { zeta: 1, a: [1, 2.5, 'x'], nested: { b: null, aa: true } },
        category: 'news',
      }),
      intent({ metadata: { plan: 'pro', region: 'eu' }, idempotency_key: 'returned-1', ttl_seconds: 90 }),
      intent({ expires_at: '2026-05-03T14:00:00.98765+02:00', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
      intent({ traceparent: 'junk', send_at: '2026-05-02T08:00:00.000456Z' }), // held: due at send_at
      intent({ send_at: '2026-04-30T08:00:00Z' }), // in the past: sent at once
      intent({ send_at: '2026-05-01T12:00:00.123Z' }), // exactly now: sent at once
      intent({ to: 'ümlaut@exämple.com', body: 'emoji 😀 and \\ "quotes"', subject: '' }),
    ];
    for (const i of cases) {
      const { notification, created } = await enqueue(t.db, i, { now, maxAttempts: 5 });
      expect(created).toBe(true);
      expect(notification).toEqual(await stored(notification.id));
    }
    const held = await enqueue(t.db, intent({ send_at: '2026-05-02T08:00:00Z' }), { now });
    expect(held.notification).toMatchObject({
      next_attempt_at: new Date('2026-05-02T08:00:00Z'),
      held_until: new Date('2026-05-02T08:00:00Z'),
    });
  });

  it('of a repeated key is the original as stored now', async () => {
    const first = await enqueue(t.db, intent({ idempotency_key: 'returned-repeat', data: { b: 1, a: 2 } }));
    await t.pool.query("UPDATE notifications SET state = 'sent', next_attempt_at = NULL, sent_at = now(), attempts = 1 WHERE id = $1", [
      first.notification.id,
    ]);
    const again = await enqueue(t.db, intent({ idempotency_key: 'returned-repeat', data: { b: 1, a: 2 } }));
    expect(again.created).toBe(false);
    expect(again.notification).toEqual(await stored(first.notification.id));
    expect(again.notification).toMatchObject({ state: 'sent', attempts: 1 });
  });

  it('is read back whole when a value is not a plain string (an object with toJSON)', async () => {
    const to = { toJSON: () => 'tojson@example.com' } as unknown as string;
    const { notification } = await enqueue(t.db, intent({ to }));
    expect(notification.recipient).toBe('tojson@example.com');
    expect(notification).toEqual(await stored(notification.id));
  });
});

describe('delivery option invariants', () => {
  it('refuse a priority or ordering outside their sets, written by any statement (domain constraints, 0193)', async () => {
    const { notification } = await enqueue(t.db, intent());
    for (const [column, value, name] of [
      ['priority', 'urgent', 'notifications_priority_known'],
      ['ordering', 'loose', 'notifications_ordering_known'],
    ] as const) {
      const err = await t.pool
        .query(`UPDATE notifications SET ${column} = $2 WHERE id = $1`, [notification.id, value])
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ code: '23514', constraint: name });
    }
    const err = await t.pool
      .query(
        'INSERT INTO notifications SELECT (json_populate_record(n, \'{"id":"ntf_x","priority":"low"}\')).* FROM notifications n WHERE id = $1',
        [notification.id],
      )
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: '23514', constraint: 'notifications_priority_known' });
  });
});
