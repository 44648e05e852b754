import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// The modules themselves rather than '@notify/outbox': this file tests the outbox's event policy.
import { STATUS_EVENT_TYPES, buildDeliveryRequest, buildStatusEvent, type MessageSubject } from '@notify/contract';
import { fromPgClient } from '../src/db/executor.js';
import { enqueue } from '../src/enqueue.js';
import { outboxInsert } from '../src/sql/outbox-insert.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';

// NOTIFY_EVENTS (notify_settings.events, migration 0060): the outbox trigger drops the status
// events the policy excludes, whoever writes them. Each case runs in a transaction that is rolled back.
let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const subject: MessageSubject = { id: 'ntf_01JPOLICY0000000000000000', tenant_id: 'acme', channel: 'email', recipient: 'ada@example.com' };

/** Under `policy`: the message types of the rows one enqueue() writes, and which of the six status events (and a retry request) an outcome writer's insert keeps. */
async function written(policy: string) {
  const client = await t.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('UPDATE notify_settings SET events = $1', [policy]);
    const db = fromPgClient(client);
    const { notification } = await enqueue(db, { tenant_id: 'acme', channel: 'email', to: 'ada@example.com', subject: 'Hi', body: 'x' });
    // held until send_at: its queued event is a row of its own on `events`
    const { notification: held } = await enqueue(db, {
      tenant_id: 'acme',
      channel: 'email',
      to: 'ada@example.com',
      body: 'later',
      send_at: new Date(Date.now() + 86_400_000).toISOString(),
    });
    const at = new Date('2026-05-01T12:00:00Z');
    await outboxInsert(db, {
      messages: [
        ...STATUS_EVENT_TYPES.map((type) =>
          buildStatusEvent(subject, { type, state: 'queued', attempts: 1, next_attempt_at: null, occurred_at: at }),
        ),
        buildDeliveryRequest(subject, 2, at, 'retry.5s'),
      ],
    });
    const { rows } = await client.query<{ id: string; type: string }>(
      // every message, the queued event an enqueue's request row carries included (0150)
      "SELECT headers->>'notification-id' AS id, headers->>'message-type' AS type FROM outbox_messages AS m WHERE txid = pg_current_xact_id() ORDER BY m.id, m.part",
    );
    await client.query('ROLLBACK');
    return {
      enqueue: rows.filter((r) => r.id === notification.id).map((r) => r.type),
      scheduled: rows.filter((r) => r.id === held.id).map((r) => r.type),
      outcomes: rows.filter((r) => r.id === subject.id).map((r) => r.type),
    };
  } finally {
    client.release();
  }
}

describe('event policy (NOTIFY_EVENTS, notify_settings.events)', () => {
  it('all (the default): every status event is written', async () => {
    const { rows } = await t.pool.query<{ events: string }>('SELECT events FROM notify_settings');
    expect(rows).toEqual([{ events: 'all' }]);
    expect(await written('all')).toEqual({
      enqueue: ['notification.deliver', 'notification.queued'],
      scheduled: ['notification.queued'],
      outcomes: [...STATUS_EVENT_TYPES, 'notification.deliver'],
    });
  });

  it('terminal: only sent, dead and cancelled; requests are kept', async () => {
    expect(await written('terminal')).toEqual({
      enqueue: ['notification.deliver'],
      scheduled: [],
      outcomes: ['notification.sent', 'notification.dead', 'notification.cancelled', 'notification.deliver'],
    });
  });

  it('none: no status event; requests are kept', async () => {
    expect(await written('none')).toEqual({ enqueue: ['notification.deliver'], scheduled: [], outcomes: ['notification.deliver'] });
  });

  it('refuses an unknown policy', async () => {
    await expect(t.pool.query("UPDATE notify_settings SET events = 'some'")).rejects.toThrow(/notify_settings_events_known/);
  });
});
