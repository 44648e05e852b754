/**
 * Waiting for due times must not cost the group its heartbeats, and rebalances (a second
 * dispatcher joining, one leaving) must lose nothing and deliver nothing early.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { countByState, startHarness, type Harness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { startReceiver, type Receiver } from './support/receiver.js';

let h: Harness | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

describe('heartbeats and rebalances', () => {
  it('keeps its group membership while a retry waits twice the session timeout on a paused partition', async () => {
    h = await startHarness({
      partitions: 1,
      retry: { baseDelayMs: 1000, maxDelayMs: 6000 },
      dispatcher: { sessionTimeoutMs: 3000, heartbeatIntervalMs: 500 },
    });
    receiver = await startReceiver((r) => (r.attempt === 1 ? { status: 429, headers: { 'retry-after': '6' } } : { status: 200 }));
    const id = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/wait`, body: 'wait' });
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.received.length === 2, { timeoutMs: 20_000, message: 'the retry after 6 s' });
    const [first, second] = r.received as [(typeof r.received)[0], (typeof r.received)[0]];
    expect(second.at - first.at).toBeGreaterThanOrEqual(6000);
    // Retry-After: 6 s from the provider's clock, a few ms before the dispatcher recorded it (backoff alone: 1 s).
    expect(h.seen.retryScheduled).toMatchObject([{ notificationId: id }]);
    expect(h.seen.retryScheduled[0]?.delayMs).toBeGreaterThan(5000);
    // One join per lane (normal, high), no rejoin: the member was never timed out while its only partition was paused.
    expect(h.seen.assigned).toHaveLength(2);
    expect(h.seen.consumerError).toHaveLength(0);
  });

  it('loses nothing and delivers nothing early when a second dispatcher joins and the first leaves', async () => {
    h = await startHarness({ partitions: 6, retry: { baseDelayMs: 400, maxDelayMs: 2000 }, dispatcher: { maxInFlight: 4 } });
    receiver = await startReceiver((req) => (req.attempt === 1 ? { status: 503 } : { status: 200 }));
    const ids: string[] = [];
    for (let i = 0; i < 40; i++)
      ids.push(await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/r/${i}`, body: `n${i}` }));
    const a = await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.received.length >= 10, { message: 'first attempts under way' });
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    await waitFor(() => r.received.filter((x) => x.attempt === 2).length >= 5, { timeoutMs: 20_000, message: 'retries under way' });
    await a.stop({ timeoutMs: 5000 });
    await waitFor(async () => (await countByState(h as Harness)).sent === 40, { timeoutMs: 30_000, message: '40 sent' });

    const rows = await h.db.db.selectFrom('notifications').select(['id', 'attempts', 'state']).execute();
    expect(rows.every((n) => n.attempts === 2 && n.state === 'sent')).toBe(true);
    expect(await h.db.db.selectFrom('attempts').select('notification_id').execute()).toHaveLength(80);
    // No retry reached the receiver before the first attempt's recorded due time.
    const attempts = await h.db.db.selectFrom('attempts').selectAll().where('attempt', '=', 1).execute();
    const dueById = new Map(attempts.map((a) => [a.notification_id, a.finished_at.getTime() + 400]));
    for (const x of r.received.filter((x) => x.attempt === 2)) expect(x.at).toBeGreaterThanOrEqual(dueById.get(x.id) ?? Number.NaN);
    const duplicates = r.received.length - 80;
    console.log(
      `rebalance: ${r.received.length} provider calls for 80 attempts (${duplicates} duplicate calls, recorded once), ${h.seen.assigned.length} group joins`,
    );
  });
});
