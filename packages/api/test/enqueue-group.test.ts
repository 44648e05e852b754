import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDb } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { PROBLEM_CATALOG, createApp, noMetrics } from '@notify/api';
import { IdempotencyConflictError, type NotificationIntent, ValidationError, enqueue } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';
import { createEnqueueGroups } from '../src/enqueue-group.js';
import { seedTenantKeys } from './support.js';

// Group commit of POST /v1/notifications against the real PostgreSQL. With one group in flight,
// the first intent goes at once, alone; every intent queued while it is written forms the next
// group (JavaScript runs the calls of one turn before any write finishes), so the groups are known.

let t: TestDatabase;
const clock = new ManualClock(new Date());
const retry = { maxAttempts: 4, defaultTtlMs: 3_600_000 };

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => {
  clock.advance(1);
});

const intent = (over: Partial<NotificationIntent> = {}): NotificationIntent => ({
  tenant_id: 'acme',
  channel: 'webhook',
  to: 'https://hooks.example.com/in',
  body: 'hello',
  ...over,
});

function groupsOf(maxGroupSize = 100, db: Parameters<typeof createEnqueueGroups>[0] = t.db) {
  const written: [size: number, isolated: boolean][] = [];
  const groups = createEnqueueGroups(db, clock, {
    maxGroupSize,
    maxInFlight: 1,
    retry,
    onGroup: (size, isolated) => written.push([size, isolated]),
  });
  return { groups, written };
}

/** The promise's value, or the error it rejected with. */
const settle = (p: Promise<unknown>): Promise<unknown> => p.catch((err: unknown) => err);

describe('createEnqueueGroups', () => {
  it('writes the intents that arrive while a group is in flight as the next group, each with its own notification', async () => {
    const { groups, written } = groupsOf();
    const traceparents = ['01', '02', '03', '04'].map((s) => `00-${s.repeat(16)}-${'ab'.repeat(8)}-01`);
    const results = await Promise.all(traceparents.map((tp, i) => groups.enqueue(intent({ body: `n${i}`, traceparent: tp }))));
    expect(written).toEqual([
      [1, false],
      [3, false],
    ]);
    expect(results.map((r) => r.created)).toEqual([true, true, true, true]);
    expect(new Set(results.map((r) => r.notification.id)).size).toBe(4);
    // Each request keeps its own trace context, and every row is committed.
    expect(results.map((r) => r.notification.traceparent)).toEqual(traceparents);
    const rows = await t.db
      .selectFrom('notifications')
      .select('body')
      .where(
        'id',
        'in',
        results.map((r) => r.notification.id),
      )
      .execute();
    expect(rows.map((r) => r.body).sort()).toEqual(['n0', 'n1', 'n2', 'n3']);
    expect(groups.pending).toBe(0);
  });

  it('a refused intent in a group fails only itself, with the error enqueue throws alone', async () => {
    const { groups, written } = groupsOf();
    const bad = intent({ channel: 'pager' });
    const [first, ok1, refused, ok2] = await Promise.all([
      settle(groups.enqueue(intent())),
      settle(groups.enqueue(intent({ body: 'a' }))),
      settle(groups.enqueue(bad)),
      settle(groups.enqueue(intent({ body: 'b' }))),
    ]);
    expect(written).toEqual([
      [1, false],
      [3, false],
    ]);
    for (const r of [first, ok1, ok2]) expect(r).toMatchObject({ created: true });
    const alone = await settle(enqueue(t.db, bad, { now: clock.now(), ...retry }));
    expect(refused).toBeInstanceOf(ValidationError);
    expect(alone).toBeInstanceOf(ValidationError);
    const fields = (e: unknown) => ({
      code: (e as ValidationError).code,
      message: (e as ValidationError).message,
      issues: (e as ValidationError).issues,
    });
    expect(fields(refused)).toEqual(fields(alone));
    expect(fields(refused).code).toBe('unknown_channel');
  });

  it('two intents with one idempotency key in one group: the first is created, the second is its replay; a different request with the key is a conflict', async () => {
    const { groups, written } = groupsOf();
    const key = 'group-dup';
    const [, created, replay, conflict] = await Promise.all([
      settle(groups.enqueue(intent())),
      settle(groups.enqueue(intent({ idempotency_key: key }))),
      settle(groups.enqueue(intent({ idempotency_key: key }))),
      settle(groups.enqueue(intent({ idempotency_key: key, body: 'something else' }))),
    ]);
    expect(written).toEqual([
      [1, false],
      [3, false],
    ]);
    const c = created as Awaited<ReturnType<typeof enqueue>>;
    const r = replay as Awaited<ReturnType<typeof enqueue>>;
    expect(c.created).toBe(true);
    expect(r.created).toBe(false);
    expect(r.notification).toEqual(c.notification);
    expect(conflict).toBeInstanceOf(IdempotencyConflictError);
    expect((conflict as IdempotencyConflictError).existingId).toBe(c.notification.id);
    const rows = await t.db.selectFrom('notifications').select('id').where('idempotency_key', '=', key).execute();
    expect(rows).toEqual([{ id: c.notification.id }]);
    // As in sequence: the same key again, alone, replays the same notification.
    const again = await enqueue(t.db, intent({ idempotency_key: key }), { now: clock.now(), ...retry });
    expect(again).toMatchObject({ created: false, notification: { id: c.notification.id } });
  });

  it('when PostgreSQL refuses the group’s statement, writes each member on its own, so only the one that fails alone fails', async () => {
    // A lock timeout is such a refusal: one member's idempotency key is being inserted by another
    // open transaction, so the group's statement waits for it, and gives up after lock_timeout.
    const db = createDb({ connectionString: `${t.url}?options=${encodeURIComponent('-c lock_timeout=300')}`, max: 4 });
    const holder = new pg.Client({ connectionString: t.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await enqueue(holder, intent({ idempotency_key: 'held' }));
      const { groups, written } = groupsOf(100, db);
      const [, ok1, held, ok2] = await Promise.all([
        settle(groups.enqueue(intent())),
        settle(groups.enqueue(intent({ body: 'a' }))),
        settle(groups.enqueue(intent({ idempotency_key: 'held' }))),
        settle(groups.enqueue(intent({ body: 'b' }))),
      ]);
      expect(written).toEqual([
        [1, false],
        [3, true],
      ]);
      expect(ok1).toMatchObject({ created: true });
      expect(ok2).toMatchObject({ created: true });
      // Alone, it waits for the same lock and fails the same way: its own error, nobody else's.
      expect(held).toMatchObject({ code: '55P03' });
    } finally {
      await holder.end();
      await db.destroy();
    }
  });

  it('when the connection breaks during the group’s statement, writes again only the members with an idempotency key', async () => {
    // The statement may have committed just before the connection went: writing a member without a
    // key again could queue it twice, so it gets the error it would have got alone.
    const db = createDb({ connectionString: t.url, max: 4 });
    const holder = new pg.Client({ connectionString: t.url });
    await holder.connect();
    // (Asked outside the holder's transaction: pg_stat_activity is a snapshot per transaction.)
    const lockWaiter = async () =>
      (
        await t.pool.query<{ pid: number }>(
          "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
      ).rows[0]?.pid;
    try {
      await holder.query('BEGIN');
      const original = await enqueue(holder, intent({ idempotency_key: 'held-2' }));
      const { groups, written } = groupsOf(100, db);
      const all = Promise.all([
        settle(groups.enqueue(intent())),
        settle(groups.enqueue(intent({ body: 'no key' }))),
        settle(groups.enqueue(intent({ idempotency_key: 'held-2' }))),
        settle(groups.enqueue(intent({ idempotency_key: 'other-2' }))),
      ]);
      const pid = await waitFor(lockWaiter, { message: 'the group waiting for the held key' });
      await t.pool.query('SELECT pg_terminate_backend($1)', [pid]);
      // Written again alone, the held key waits for its holder once more; then the holder commits.
      await waitFor(
        async () => {
          const p = await lockWaiter();
          return p !== undefined && p !== pid;
        },
        { message: 'the held key written again, alone' },
      );
      await holder.query('COMMIT');
      const [, noKey, held, other] = await all;
      expect(written).toEqual([
        [1, false],
        [3, true],
      ]);
      expect(noKey).toBeInstanceOf(Error);
      expect((noKey as { severity?: string }).severity).not.toBe('ERROR');
      expect(held).toMatchObject({ created: false, notification: { id: original.notification.id } });
      expect(other).toMatchObject({ created: true });
      const rows = await t.db.selectFrom('notifications').select('id').where('body', '=', 'no key').execute();
      expect(rows).toEqual([]);
    } finally {
      await holder.end();
      await db.destroy();
    }
  });

  it('bounds the group size; 1 writes every intent on its own', async () => {
    const two = groupsOf(2);
    await Promise.all(Array.from({ length: 6 }, () => two.groups.enqueue(intent())));
    expect(two.written.map(([size]) => size)).toEqual([1, 2, 2, 1]);
    const one = groupsOf(1);
    await Promise.all(Array.from({ length: 4 }, () => one.groups.enqueue(intent())));
    expect(one.written.map(([size]) => size)).toEqual([1, 1, 1, 1]);
    expect(() => createEnqueueGroups(t.db, clock, { maxGroupSize: 1001, maxInFlight: 1, retry })).toThrow(RangeError);
    expect(() => createEnqueueGroups(t.db, clock, { maxGroupSize: 10, maxInFlight: 0, retry })).toThrow(RangeError);
  });
});

describe('POST /v1/notifications with group commit', () => {
  it('answers each request of a group with its own status and body, as when it is sent alone', async () => {
    const { acme } = await seedTenantKeys(t, ['acme'], clock.now());
    const sizes: number[] = [];
    const app = createApp({
      db: t.db,
      clock,
      config: { retry },
      apiKeyCacheMs: 60_000,
      enqueueGroup: { maxGroupSize: 100, maxInFlight: 1 },
      metrics: { ...noMetrics, observeEnqueueGroup: (size) => sizes.push(size) },
    });
    const post = (body: unknown, key?: string) =>
      app.request('/v1/notifications', {
        method: 'POST',
        headers: { authorization: `Bearer ${acme}`, 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
        body: JSON.stringify(body),
      });
    const webhook = { channel: 'webhook', to: 'https://hooks.example.com/in', body: 'hi' };
    expect((await post(webhook)).status).toBe(202); // the key is cached from here on
    // Hold the one write slot: a request whose key another transaction is inserting waits for it.
    const gate = new pg.Client({ connectionString: t.url });
    await gate.connect();
    try {
      await gate.query('BEGIN');
      await enqueue(gate, { ...webhook, tenant_id: 'acme', idempotency_key: 'gate' });
      const held = post(webhook, 'gate');
      await waitFor(
        async () =>
          (
            await t.pool.query<{ n: number }>(
              "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            )
          ).rows[0]!.n > 0,
        { message: 'the gate request waiting for the open transaction' },
      );
      const burst = [
        post(webhook),
        post({ ...webhook, channel: 'pager' }),
        post(webhook, 'http-dup'),
        post(webhook, 'http-dup'),
        post({ ...webhook, body: 'other' }, 'http-dup'),
        post(webhook),
      ];
      await gate.query('COMMIT');
      const responses = await Promise.all([held, ...burst]);
      expect(responses.map((r) => r.status)).toEqual([200, 202, 422, 202, 200, 422, 202]);
      const bodies = await Promise.all(responses.map((r) => r.json() as Promise<Record<string, unknown>>));
      expect(bodies[4]!.id).toBe(bodies[3]!.id);
      expect(bodies[5]).toMatchObject({ code: 'idempotency_conflict', existing_id: bodies[3]!.id });
      // The refused request's problem, byte for byte as when it is sent alone.
      const alone = await post({ ...webhook, channel: 'pager' });
      expect(alone.status).toBe(PROBLEM_CATALOG.unknown_channel.status);
      expect(JSON.stringify(bodies[2])).toBe(await alone.text());
      expect(responses[2]!.headers.get('content-type')).toBe('application/problem+json');
      expect(Math.max(...sizes)).toBeGreaterThan(1);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(9);
    } finally {
      await gate.end();
    }
  });
});
