/**
 * The repair sweep through real Kafka and PostgreSQL: a queued notification whose message was
 * lost is re-published and delivered; a re-published duplicate of a message that was only late
 * is skipped by the guard, so the recipient gets one delivery.
 */
import { enqueue } from '@notify/outbox';
import { silentLogger, systemClock } from '@notify/runtime';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { createDispatcherEvents, createKafkaConsumerProgress, createRepairSweep } from '../src/index.js';
import { stateOf, startHarness, type Harness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { startReceiver, type Receiver } from './support/receiver.js';

let h: Harness | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

describe('repair sweep', () => {
  it('re-publishes a queued notification whose message was lost, and it is delivered once', async () => {
    h = await startHarness({ dispatcher: { repairAfterMs: 300, repairIntervalMs: 50 } });
    receiver = await startReceiver(() => ({ status: 200 }));
    // Lose the message: the notification is queued, but its delivery request never reaches Kafka.
    const id = await h.db.db.transaction().execute(async (trx) => {
      const { notification } = await enqueue(trx, {
        tenant_id: 't1',
        channel: 'webhook',
        to: `${(receiver as Receiver).url}/lost`,
        body: 'lost',
      });
      await sql`DELETE FROM outbox WHERE topic = 'requests' AND headers->>'notification-id' = ${notification.id}`.execute(trx);
      return notification.id;
    });
    await h.startDispatcher({ webhook: createHttpTestProvider() });

    const r = receiver;
    await waitFor(async () => (await stateOf(h as Harness, id)).state === 'sent', { timeoutMs: 15_000, message: 'repaired and sent' });
    expect(r.received.map((x) => x.id)).toEqual([id]);
    // At least one re-publish (more if delivery took longer than repairAfterMs: those are skipped by the guard).
    expect(h.seen.repaired.reduce((n, e) => n + e.count, 0)).toBeGreaterThanOrEqual(1);
    expect((await stateOf(h, id)).attempts).toBe(1);
  });

  it('a duplicate from the sweep is harmless: one delivery, the second message skipped', async () => {
    h = await startHarness({ dispatcher: { repairAfterMs: 1, repairIntervalMs: 3_600_000 } });
    receiver = await startReceiver(() => ({ status: 200 }));
    const id = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/late`, body: 'late' });
    await waitFor(() => (h as Harness).drain.published >= 2, { message: 'original published' });
    // No dispatcher runs yet, so the notification is overdue; the sweep cannot know its message
    // is only late, and re-publishes it (repairAfterMs is 1 ms here).
    const sweep = createRepairSweep(h.config, {
      db: h.db.db,
      clock: systemClock,
      logger: silentLogger,
      events: createDispatcherEvents(silentLogger),
    });
    await waitFor(async () => (await sweep.runOnce()) === 1, { message: 'one notification re-published' });

    await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(async () => (await stateOf(h as Harness, id)).state === 'sent', { timeoutMs: 15_000, message: 'sent' });
    await waitFor(() => (h as Harness).seen.skipped.length === 1, { timeoutMs: 10_000, message: 'duplicate skipped' });
    expect(r.received.map((x) => x.id)).toEqual([id]);
    expect((await stateOf(h, id)).attempts).toBe(1);
    // Same key, same partition: the original came first and sent it; the duplicate found it terminal.
    expect(h.seen.skipped[0]).toMatchObject({ notificationId: id, attempt: 1, reason: 'terminal' });
  });

  it('tells consumer lag from loss: a published request the group has not read past is left alone, until the group commits past it', async () => {
    h = await startHarness({ dispatcher: { repairAfterMs: 1, repairIntervalMs: 3_600_000 } });
    const id = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: 'https://hooks.example.com/lagging', body: 'lagging' });
    await waitFor(() => (h as Harness).drain.published >= 2, { message: 'request published' });
    const progress = createKafkaConsumerProgress(h.kafka.kafka, h.config);
    const events = createDispatcherEvents(silentLogger);
    const deferred: number[] = [];
    events.on('repairDeferred', (e) => void deferred.push(e.count));
    const sweep = createRepairSweep(h.config, { db: h.db.db, clock: systemClock, logger: silentLogger, events, progress });
    try {
      // No dispatcher has read anything: the overdue notification is lag, not loss (the sweep
      // without `progress` re-publishes it, as the test above shows).
      await waitFor(async () => (await sweep.runOnce(), deferred.length > 0), { message: 'the sweep deferred it' });
      expect(deferred).toEqual([1]);
      const { rows } = await sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM outbox WHERE topic = 'requests' AND headers->>'notification-id' = ${id}`.execute(h.db.db);
      expect(rows[0]!.n).toBe(1);

      // The group commits past the end of every partition (the message was read, and lost): now it is loss.
      const topic = h.kafka.topic('requests');
      const ends = await h.kafka.admin.fetchTopicOffsets(topic);
      await h.kafka.admin.setOffsets({
        groupId: h.config.groupId,
        topic,
        partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })),
      });
      expect(await sweep.runOnce()).toBe(1);
    } finally {
      await progress.close();
    }
  });
});
