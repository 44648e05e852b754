/**
 * Graceful shutdown through real Kafka: stop fetching, let running deliveries finish within the
 * deadline, commit what finished, leave the rest queued; the next dispatcher of the group picks
 * up exactly the rest.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { countByState, startHarness, type Harness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { gate, startReceiver, type Receiver } from './support/receiver.js';

let h: Harness | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

describe('graceful shutdown', () => {
  it('finishes running deliveries, leaves the rest queued, and the next dispatcher sends only the rest', async () => {
    h = await startHarness({ partitions: 1, dispatcher: { maxInFlight: 2, sendTimeoutMs: 20_000 } });
    const hold = gate();
    let holding = true;
    receiver = await startReceiver(async () => {
      if (holding) await hold.promise;
      return { status: 200 };
    });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push(await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/r/${i}`, body: `n${i}` }));
    const first = await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.open === 2, { message: '2 deliveries in flight' });

    const stopping = first.stop({ timeoutMs: 15_000 });
    // Stopping waits for the running deliveries; let them finish now.
    hold.open();
    holding = false;
    const report = await stopping;
    expect(report).toEqual({ notStarted: 4, abortedInFlight: false });
    expect(await countByState(h)).toEqual({ sent: 2, queued: 4 });
    expect(r.received).toHaveLength(2);

    // A second dispatcher in the same group resumes from the committed offsets.
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    await waitFor(async () => (await countByState(h as Harness)).sent === 6, { timeoutMs: 20_000, message: 'all 6 sent' });
    expect(r.received.map((x) => x.id).sort()).toEqual([...ids].sort());
    // Each was sent once: the two finished before shutdown were committed, not re-read.
    expect(h.seen.skipped).toHaveLength(0);
  });

  it('aborts deliveries still running at the deadline and leaves them queued, with no attempt recorded', async () => {
    h = await startHarness({ partitions: 1, dispatcher: { maxInFlight: 1, sendTimeoutMs: 20_000 } });
    const hold = gate();
    let holding = true;
    receiver = await startReceiver(async () => {
      if (holding) await hold.promise;
      return { status: 200 };
    });
    const id = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/stuck`, body: 'stuck' });
    const first = await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.open === 1, { message: 'delivery in flight' });

    const report = await first.stop({ timeoutMs: 300 });
    expect(report.abortedInFlight).toBe(true);
    const row = await h.db.db.selectFrom('notifications').select(['state', 'attempts']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toEqual({ state: 'queued', attempts: 0 });
    expect(await h.db.db.selectFrom('attempts').selectAll().execute()).toHaveLength(0);

    holding = false;
    hold.open();
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    await waitFor(async () => (await countByState(h as Harness)).sent === 1, { timeoutMs: 20_000, message: 'sent by the next dispatcher' });
  });

  it('writes outcomes still waiting for their group at once, acknowledges them, and the next dispatcher sends nothing twice', async () => {
    // A group delay far longer than the test, and a fourth delivery held open by the receiver: the
    // writer keeps the three answered outcomes for it to join (a running delivery may still record),
    // so only stop() can write them in time.
    h = await startHarness({ partitions: 1, dispatcher: { maxInFlight: 4, outcomeBatchDelayMs: 60_000, sendTimeoutMs: 20_000 } });
    const hold = gate();
    receiver = await startReceiver(async (req) => {
      if (req.path.includes('/held/')) await hold.promise;
      return { status: 200 };
    });
    // The held one first: it is read (one partition) and started before any of the three can finish.
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/held/0`, body: 'held' });
    for (let i = 0; i < 3; i++) await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/g/${i}`, body: `g${i}` });
    const first = await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.received.length === 3 && r.open === 1, { message: '3 provider calls answered, 1 held' });
    expect(await countByState(h)).toEqual({ queued: 4 }); // answered, but their group is not written yet

    const stopping = first.stop({ timeoutMs: 15_000 });
    // stop() writes the waiting group at once, while the held delivery still runs.
    await waitFor(async () => (await countByState(h as Harness)).sent === 3, { timeoutMs: 5_000, message: 'the 3 written by stop()' });
    hold.open();
    const report = await stopping;
    expect(report).toEqual({ notStarted: 0, abortedInFlight: false });
    expect(await countByState(h)).toEqual({ sent: 4 });
    expect(h.seen.outcomesFlushed.reduce((n, f) => n + f.recorded, 0)).toBe(4);

    // Their offsets were committed: a second dispatcher reads only the new one (a re-read would show as skipped).
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/g/3`, body: 'g3' });
    await h.startDispatcher({ webhook: createHttpTestProvider() }, { outcomeBatchDelayMs: 5 });
    await waitFor(async () => (await countByState(h as Harness)).sent === 5, { timeoutMs: 20_000, message: 'the fifth sent' });
    expect(r.received).toHaveLength(5);
    expect(h.seen.skipped).toHaveLength(0);
  });
});
