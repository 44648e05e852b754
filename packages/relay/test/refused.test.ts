import { ConfigResourceTypes } from 'kafkajs';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADERS, parseStatusEvent } from '@notify/contract';
import { enqueue, fromKysely } from '@notify/outbox';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { type TestKafka, createTestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';
import { type Relay, createRelay } from '../src/index.js';
import { outboxCounts, recordEvents } from './support.js';

// An outbox row Kafka will never take used to be retried forever, blocking its key slot. Now it is
// set aside in outbox_refused, its notification ends dead (publish_failed) with a status event,
// and the rows behind it on the same key go out. Two ways to be refused: larger than the relay's
// maxMessageBytes (not even tried), or refused by the broker (a topic whose max.message.bytes is
// smaller than the relay assumes: MESSAGE_TOO_LARGE).

let tdb: TestDatabase;
let tk: TestKafka;
let relay: Relay | undefined;

beforeAll(async () => {
  tdb = await createTestDatabase();
  tk = await createTestKafka();
  await tk.createTopics(['requests', 'events'], 1);
  await tk.admin.alterConfigs({
    validateOnly: false,
    resources: [
      { type: ConfigResourceTypes.TOPIC, name: tk.topic('requests'), configEntries: [{ name: 'max.message.bytes', value: '20000' }] },
    ],
  });
});

afterAll(async () => {
  await relay?.stop();
  await tk?.close();
  await tdb?.close();
});

async function enqueueWithPadding(n: number, padBytes: number, priority: 'normal' | 'high' = 'normal'): Promise<string> {
  return tdb.db.transaction().execute(async (trx) => {
    const {
      notification: { id },
    } = await enqueue(
      fromKysely(trx),
      { tenant_id: 'acme', channel: 'webhook', to: 'https://hooks.example.com/same-key', body: `n${n}`, priority },
      { maxAttempts: 3, defaultTtlMs: 3_600_000 },
    );
    if (padBytes > 0) {
      // Only a domain service writing its own outbox rows could make one this large; the API caps content at 64 KiB.
      await sql`UPDATE outbox SET headers = headers || ${JSON.stringify({ 'x-pad': 'x'.repeat(padBytes) })}::jsonb
                 WHERE topic LIKE 'requests%' AND headers ->> ${HEADERS.notificationId} = ${id}`.execute(trx);
    }
    return id;
  });
}

describe('an outbox row Kafka refuses for good', () => {
  it('is set aside with its reason, its notification ends dead (publish_failed), and its key moves on', async () => {
    const first = await enqueueWithPadding(1, 0);
    const brokerRefuses = await enqueueWithPadding(2, 30_000); // under maxMessageBytes, over the topic's 20,000
    const tooLarge = await enqueueWithPadding(3, 1_100_000); // over maxMessageBytes: never sent
    const last = await enqueueWithPadding(4, 0);

    relay = createRelay(
      { topicPrefix: tk.prefix, batchSize: 50, pollIntervalMs: 100, retentionMs: 3_600_000, backoff: { baseMs: 20, maxMs: 200 } },
      { db: tdb.db, connectionString: tdb.url, kafka: tk.kafka },
    );
    const refusedEvents = recordEvents([relay], 'refused');
    const errors = recordEvents([relay], 'publishError');
    await relay.start();

    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
      timeoutMs: 30_000,
      message: 'every outbox row published or set aside',
    });

    const requests = await tk.readAll('requests', 2);
    expect(requests.map((m) => m.headers![HEADERS.notificationId]!.toString())).toEqual([first, last]);

    const { rows: refused } = await sql<{
      notification_id: string;
      reason: string;
      topic: string;
    }>`SELECT notification_id, reason, topic FROM outbox_refused`.execute(tdb.db);
    expect(refused.map((r) => [r.notification_id, r.topic, r.reason.split(':')[0]]).sort()).toEqual(
      [
        [brokerRefuses, 'requests', 'message_too_large'],
        [tooLarge, 'requests', 'message_too_large'],
      ].sort(),
    );
    expect(refused.find((r) => r.notification_id === tooLarge)!.reason).toMatch(/^message_too_large: \d+ bytes > 1000000$/);

    const states = await tdb.db.selectFrom('notifications').select(['id', 'state', 'dead_reason', 'last_error']).orderBy('id').execute();
    expect(states.map((s) => [s.id, s.state, s.dead_reason])).toEqual([
      [first, 'queued', null],
      [brokerRefuses, 'dead', 'publish_failed'],
      [tooLarge, 'dead', 'publish_failed'],
      [last, 'queued', null],
    ]);

    // Each enqueue's request row carries its notification.queued event. The published rows' events
    // go out; the row over maxMessageBytes is set aside whole (neither message sent); the broker's
    // refusal of a request may come after its event was written (a sendBatch is not atomic across
    // topics). The two dead events follow.
    const events = (await tk.readAll('events', 4)).map((m) => parseStatusEvent(m.value));
    const queued = new Set(events.flatMap((e) => (e.ok && e.message.type === 'notification.queued' ? [e.message.id] : [])));
    expect(queued).toContain(first);
    expect(queued).toContain(last);
    expect(queued).not.toContain(tooLarge);
    const dead = events.filter((e) => e.ok && e.message.type === 'notification.dead');
    expect(dead.map((e) => (e.ok ? [e.message.id, e.message.type, e.message.dead_reason] : e)).sort()).toEqual(
      [
        [brokerRefuses, 'notification.dead', 'publish_failed'],
        [tooLarge, 'notification.dead', 'publish_failed'],
      ].sort(),
    );
    expect(refusedEvents.map((e) => e.payload.deadChannel)).toEqual(['webhook', 'webhook']);
    // The broker's refusal failed one batch; the relay then went row by row and found the row.
    expect(errors.map((e) => e.payload.stage)).toEqual(['publish']);
  });

  it('ends a high-priority notification dead too when its request (requests.high) is refused', async () => {
    // Runs after the first case, on the same relay: a refused first request of priority high is a
    // delivery request like one on `requests`, so its notification cannot stay queued for ever.
    const tooLargeHigh = await enqueueWithPadding(5, 1_100_000, 'high');
    await waitFor(async () => (await outboxCounts(tdb.pool)).unpublished === 0, {
      timeoutMs: 30_000,
      message: 'the high-priority row set aside',
    });
    const row = await tdb.db
      .selectFrom('notifications')
      .select(['state', 'dead_reason'])
      .where('id', '=', tooLargeHigh)
      .executeTakeFirstOrThrow();
    expect([row.state, row.dead_reason]).toEqual(['dead', 'publish_failed']);
    const { rows: refused } = await sql<{
      topic: string;
    }>`SELECT topic FROM outbox_refused WHERE notification_id = ${tooLargeHigh}`.execute(tdb.db);
    expect(refused.map((r) => r.topic)).toEqual(['requests.high']);
  });
});
