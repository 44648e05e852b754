/**
 * The repair sweep's lookup of a notification's newest published delivery request: from the
 * relay's records in outbox_published (migration 0280), and from outbox rows a relay of an earlier
 * version marked published, whichever is newer by outbox id; status events and dead letters never.
 */
import { fromPgClient } from '@notify/outbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { outboxLatestRequests } from '../src/sql/outbox-latest-requests.js';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

const AT = new Date('2026-05-01T12:00:00Z');

/** An outbox row as a relay before 0280 left it (marked published); returns its id. */
async function legacyRow(notificationId: string, topic: string, key: string, publishedAt: Date): Promise<string> {
  const { rows } = await t.pool.query<{ id: string }>(
    `INSERT INTO outbox (topic, key, value, headers, published_at) VALUES ($1, $2, '{}', $3, $4) RETURNING id`,
    [topic, key, { 'notification-id': notificationId }, publishedAt],
  );
  return rows[0]!.id;
}

async function record(outboxId: string, notificationId: string | null, topic: string, key: string, publishedAt: Date): Promise<void> {
  await t.pool.query('INSERT INTO outbox_published (outbox_id, notification_id, topic, key, published_at) VALUES ($1, $2, $3, $4, $5)', [
    outboxId,
    notificationId,
    topic,
    key,
    publishedAt,
  ]);
}

describe('outboxLatestRequests', () => {
  it('answers the newest delivery request per notification across records and marked rows', async () => {
    const later = new Date(AT.getTime() + 5_000);
    // ntf_1: a request recorded, then a retry recorded (newest).
    await record('101', 'ntf_1', 'requests', 'k1', AT);
    await record('105', 'ntf_1', 'retry.30s', 'k1', later);
    // ntf_2: a marked legacy request, then a recorded retry (newer id).
    const legacy2 = await legacyRow('ntf_2', 'requests', 'k2', AT);
    await record(String(BigInt(legacy2) + 1000n), 'ntf_2', 'retry.5m', 'k2', later);
    // ntf_3: a recorded request, then a marked legacy retry with a higher id (newest).
    await record('1', 'ntf_3', 'requests', 'k3', AT);
    await legacyRow('ntf_3', 'retry.30s', 'k3', later);
    // ntf_4: only a marked status event and a marked dead letter: no delivery request.
    await legacyRow('ntf_4', 'events', 'k4', AT);
    await legacyRow('ntf_4', 'dlq', 'k4', AT);
    // Not asked for, and a record without a notification id.
    await record('200', 'ntf_other', 'requests', 'k5', AT);
    await record('201', null, 'requests', 'k6', AT);

    const got = await outboxLatestRequests(fromPgClient(t.pool), { notificationIds: ['ntf_1', 'ntf_2', 'ntf_3', 'ntf_4', 'ntf_none'] });
    expect(got.map((r) => ({ ...r, published_at: new Date(r.published_at).getTime() }))).toEqual([
      { notification_id: 'ntf_1', topic: 'retry.30s', key: 'k1', published_at: later.getTime() },
      { notification_id: 'ntf_2', topic: 'retry.5m', key: 'k2', published_at: later.getTime() },
      { notification_id: 'ntf_3', topic: 'retry.30s', key: 'k3', published_at: later.getTime() },
    ]);
    expect(await outboxLatestRequests(fromPgClient(t.pool), { notificationIds: [] })).toEqual([]);
  });
});
