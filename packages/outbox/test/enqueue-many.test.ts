import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStatusEvent } from '@notify/contract';
import { enqueue } from '../src/enqueue.js';
import { enqueueMany } from '../src/enqueue-many.js';
import { BatchRefusedError, IdempotencyConflictError, ValidationError } from '../src/errors.js';
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
  tenant_id: 'batch',
  channel: 'email',
  to: 'ada@example.com',
  body: 'Welcome',
  ...over,
});

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

describe('scheduled send (send_at)', () => {
  const now = new Date('2026-05-01T12:00:00Z');

  it('holds a notification due later: queued, next_attempt_at = send_at, no delivery request yet, expiry counted from send_at', async () => {
    const { notification } = await t.db
      .transaction()
      .execute((trx) => enqueue(trx, intent({ send_at: '2026-05-03T08:00:00Z', ttl_seconds: 3600 }), { now }));
    expect(notification).toMatchObject({ state: 'queued', priority: 'normal', ordering: 'relaxed' });
    expect(notification.send_at).toEqual(new Date('2026-05-03T08:00:00Z'));
    expect(notification.held_until).toEqual(new Date('2026-05-03T08:00:00Z'));
    expect(notification.next_attempt_at).toEqual(new Date('2026-05-03T08:00:00Z'));
    expect(notification.expires_at).toEqual(new Date('2026-05-03T09:00:00Z'));
    const rows = await outboxFor(notification.id);
    expect(rows.map((r) => r.topic)).toEqual(['events']);
    const event = parseStatusEvent(rows[0]!.value);
    expect(event.ok && event.message.next_attempt_at).toBe('2026-05-03T08:00:00.000Z');
  });

  it('sends a past send_at at once', async () => {
    const { notification } = await t.db.transaction().execute((trx) => enqueue(trx, intent({ send_at: '2026-04-01T00:00:00Z' }), { now }));
    expect(notification.held_until).toBeNull();
    expect(notification.next_attempt_at).toEqual(now);
    expect((await outboxFor(notification.id)).map((r) => r.topic)).toEqual(['requests', 'events']);
  });

  it('refuses send_at more than 30 days ahead, a malformed one, and an expires_at not after it', async () => {
    const refused = async (over: Partial<NotificationIntent>) =>
      t.db.transaction().execute((trx) =>
        enqueue(trx, intent(over), { now }).then(
          () => null,
          (e: unknown) => e,
        ),
      );
    const far = await refused({ send_at: '2026-06-01T12:00:01Z' });
    expect(far).toBeInstanceOf(ValidationError);
    expect((far as ValidationError).issues).toEqual([{ path: 'send_at', message: 'must be at most 30 days ahead' }]);
    const bad = await refused({ send_at: 'tomorrow', to: 'nope' });
    expect((bad as ValidationError).issues).toEqual([
      { path: 'to', message: 'must be an email address' },
      { path: 'send_at', message: 'Invalid ISO datetime' },
    ]);
    const early = await refused({ send_at: '2026-05-02T00:00:00Z', expires_at: '2026-05-01T18:00:00Z' });
    expect(early).toMatchObject({ code: 'bad_expiry', issues: [{ path: 'expires_at', message: 'must be after send_at' }] });
  });

  it('treats another send_at under the same idempotency key as a different request', async () => {
    await t.db
      .transaction()
      .execute((trx) => enqueue(trx, intent({ idempotency_key: 'sched-1', send_at: '2026-05-02T00:00:00Z' }), { now }));
    const again = await t.db
      .transaction()
      .execute((trx) => enqueue(trx, intent({ idempotency_key: 'sched-1', send_at: '2026-05-02T00:00:00Z' }), { now }));
    expect(again.created).toBe(false);
    const other = await t.db
      .transaction()
      .execute((trx) =>
        enqueue(trx, intent({ idempotency_key: 'sched-1', send_at: '2026-05-02T00:00:01Z' }), { now }).catch((e: unknown) => e),
      );
    expect(other).toBeInstanceOf(IdempotencyConflictError);
  });
});

describe('priority and ordering', () => {
  it('puts a high-priority first attempt on requests.high and stores both options', async () => {
    const { notification } = await t.db.transaction().execute((trx) => enqueue(trx, intent({ priority: 'high', ordering: 'strict' })));
    expect(notification).toMatchObject({ priority: 'high', ordering: 'strict' });
    expect((await outboxFor(notification.id)).map((r) => r.topic)).toEqual(['requests.high', 'events']);
  });

  it('refuses unknown values with every other issue', async () => {
    const error = await t.db
      .transaction()
      .execute((trx) => enqueue(trx, intent({ priority: 'urgent' as never, ordering: 'fifo' as never, to: 'x' })).catch((e: unknown) => e));
    expect((error as ValidationError).issues).toEqual([
      { path: 'to', message: 'must be an email address' },
      { path: 'priority', message: 'must be "high" or "normal"' },
      { path: 'ordering', message: 'must be "strict" or "relaxed"' },
    ]);
  });
});

describe('enqueueMany', () => {
  it('queues every valid item in one call and fails only the invalid ones, in order', async () => {
    const results = await t.db
      .transaction()
      .execute((trx) =>
        enqueueMany(trx, [
          intent({ to: 'a@example.com' }),
          intent({ to: 'not an address' }),
          intent({ to: 'c@example.com', idempotency_key: 'm-1' }),
        ]),
      );
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    expect(results[0]).toMatchObject({ ok: true, created: true, notification: { recipient: 'a@example.com', state: 'queued' } });
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'validation_failed' } });
    expect(results[2]).toMatchObject({ ok: true, created: true, notification: { recipient: 'c@example.com', idempotency_key: 'm-1' } });
    for (const r of results) if (r.ok) expect((await outboxFor(r.notification.id)).map((o) => o.topic)).toEqual(['requests', 'events']);
  });

  it('refuses an item whose data holds Infinity or NaN, and queues the plain items around it', async () => {
    const results = await t.db
      .transaction()
      .execute((trx) =>
        enqueueMany(trx, [
          intent({ to: 'f1@example.com', data: { n: 1 } }),
          intent({ data: { n: Infinity } }),
          intent({ to: 'f3@example.com' }),
        ]),
      );
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    expect(results[1]).toMatchObject({ ok: false, error: { code: 'validation_failed', issues: [{ path: 'data.n' }] } });
    const first = results[0]!;
    expect(first.ok && first.notification.data).toEqual({ n: 1 });
  });

  it('keeps idempotency per item: a repeated key returns the original, a key reused for another request is refused', async () => {
    const first = await t.db.transaction().execute((trx) => enqueueMany(trx, [intent({ idempotency_key: 'k-a' })]));
    const again = await t.db
      .transaction()
      .execute((trx) => enqueueMany(trx, [intent({ idempotency_key: 'k-a' }), intent({ idempotency_key: 'k-a', body: 'other' })]));
    expect(again[0]).toMatchObject({ ok: true, created: false });
    const [a, f] = [again[0]!, first[0]!];
    expect(a.ok && f.ok && a.notification.id === f.notification.id).toBe(true);
    expect(again[1]).toMatchObject({ ok: false });
    expect(!again[1]!.ok && again[1]!.error).toBeInstanceOf(IdempotencyConflictError);
  });

  it('returns each notification as stored: created ones rebuilt from the intent, a repeat and a non-string value read whole', async () => {
    const stored = async (id: string) => (await t.pool.query('SELECT * FROM notifications WHERE id = $1', [id])).rows[0] as unknown;
    const now = new Date('2026-05-01T12:00:00.123Z');
    await enqueueMany(t.db, [intent({ idempotency_key: 'k-stored', data: { b: 1 } })], { now });
    await t.pool.query(
      "UPDATE notifications SET state = 'sent', next_attempt_at = NULL, sent_at = now(), attempts = 1 WHERE idempotency_key = 'k-stored'",
    );
    const to = { toJSON: () => 'tojson@example.com' } as unknown as string;
    const cases: NotificationIntent[] = [
      intent(),
      intent({ channel: 'sms', to: '+14155550100', body: 'Code 1234', priority: 'high', ordering: 'strict' }),
      intent({ channel: 'webhook', to: 'https://hooks.example.com/a', body: undefined, template: 'order', template_version: 3 }),
      intent({ body: undefined, template: 'welcome', data: { zeta: 1, a: [1, 2.5, 'x'] }, category: 'news', metadata: { plan: 'pro' } }),
      intent({ idempotency_key: 'k-new', ttl_seconds: 90, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
      intent({ send_at: '2026-05-02T08:00:00.000456Z', expires_at: '2026-05-03T14:00:00.98765+02:00' }),
      intent({ idempotency_key: 'k-stored', data: { b: 1 } }),
      intent({ to }),
      intent({ to: 'not an address' }),
    ];
    const results = await enqueueMany(t.db, cases, { now, maxAttempts: 5 });
    expect(results.map((r) => r.ok && r.created)).toEqual([true, true, true, true, true, true, false, true, false]);
    for (const r of results) if (r.ok) expect(r.notification).toEqual(await stored(r.notification.id));
    expect(results[6]).toMatchObject({ ok: true, notification: { state: 'sent', attempts: 1 } });
  });

  it('a batch of plain intents (one INSERT per table): each notification as stored, in order, with the settings and the event policy applied', async () => {
    const client = await t.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("UPDATE notify_settings SET max_attempts = 3, default_ttl_ms = 60000, events = 'none'");
      const now = new Date('2026-05-01T12:00:00.123Z');
      const cases: NotificationIntent[] = [
        intent({ subject: 'Hi' }),
        intent({ channel: 'sms', to: '+14155550100', body: 'Code 1234' }),
        intent({
          channel: 'webhook',
          to: 'https://hooks.example.com/a',
          traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
        }),
        intent(),
      ];
      const results = await enqueueMany(client, cases, { now });
      const ids = results.map((r) => (r.ok ? r.notification.id : ''));
      const { rows } = await client.query('SELECT * FROM notifications WHERE id = ANY($1)', [ids]);
      for (const r of results) {
        expect(r).toMatchObject({ ok: true, created: true });
        if (r.ok) expect(r.notification).toEqual(rows.find((row: { id: string }) => row.id === r.notification.id));
      }
      expect(rows.map((r: { max_attempts: number }) => r.max_attempts)).toEqual([3, 3, 3, 3]);
      for (const r of rows) expect((r.expires_at as Date).getTime() - now.getTime()).toBe(60_000);
      // Requests only (events = 'none'), in the batch's order.
      const outbox = await client.query<{ id: string; event: boolean }>(
        "SELECT headers->>'notification-id' AS id, event_value IS NOT NULL AS event FROM outbox WHERE headers->>'notification-id' = ANY($1) ORDER BY outbox.id",
        [ids],
      );
      expect(outbox.rows).toEqual(ids.map((id) => ({ id, event: false })));
      // The options name the settings instead.
      const [again] = await enqueueMany(client, [intent()], { now, maxAttempts: 9, defaultTtlMs: 1_000 });
      expect(again).toMatchObject({ ok: true, notification: { max_attempts: 9, expires_at: new Date(now.getTime() + 1_000) } });
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('atomic: one refused item queues nothing and names every refused item', async () => {
    const before = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .executeTakeFirstOrThrow();
    const error = await t.db
      .transaction()
      .execute((trx) =>
        enqueueMany(trx, [intent({ to: 'x@example.com' }), intent({ to: 'bad' }), intent({ channel: 'pigeon' })], { atomic: true }).catch(
          (e: unknown) => e,
        ),
      );
    expect(error).toBeInstanceOf(BatchRefusedError);
    expect((error as BatchRefusedError).items.map((i) => [i.index, i.error.code])).toEqual([
      [1, 'validation_failed'],
      [2, 'unknown_channel'],
    ]);
    const after = await t.db
      .selectFrom('notifications')
      .select(sql<number>`count(*)::int`.as('c'))
      .executeTakeFirstOrThrow();
    expect(after.c).toBe(before.c);
  });

  it('atomic: an all-valid batch is queued', async () => {
    const results = await t.db
      .transaction()
      .execute((trx) => enqueueMany(trx, [intent(), intent({ send_at: new Date(Date.now() + 60_000).toISOString() })], { atomic: true }));
    expect(results.every((r) => r.ok && r.created)).toBe(true);
  });

  it('refuses an empty batch and one over 1000 items', async () => {
    await expect(t.db.transaction().execute((trx) => enqueueMany(trx, []))).rejects.toThrow(RangeError);
    await expect(
      t.db.transaction().execute((trx) =>
        enqueueMany(
          trx,
          Array.from({ length: 1001 }, () => intent()),
        ),
      ),
    ).rejects.toThrow(RangeError);
  });
});
