/**
 * Ordering of one recipient's notifications, on real Kafka, in both modes:
 * - relaxed (default): first attempts start in enqueue order, but a retried notification is
 *   overtaken by later ones;
 * - strict: a notification is not attempted while an earlier one to the same recipient is still
 *   queued (even one waiting for a retry, or scheduled); a dead or cancelled predecessor releases it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
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

/** The order in which the receiver accepted (200) notifications on `path`. */
const acceptedOrder = (r: Receiver, path: string) => r.received.filter((x) => x.path === path && x.status === 200).map((x) => x.id);

describe('ordering per recipient', () => {
  it('relaxed lets later notifications overtake a retry; strict holds them until the earlier one is sent, dead or cancelled', async () => {
    h = await startHarness({ partitions: 2, retry: { baseDelayMs: 300, maxDelayMs: 2000, maxAttempts: 4 } });
    // The first notification on each path fails its first attempt (503), except on /dead, where
    // it fails for good (400). Everything else succeeds.
    const firstIds = new Set<string>();
    receiver = await startReceiver((req) => {
      if (!firstIds.has(req.id)) return { status: 200 };
      if (req.path === '/dead') return { status: 400 };
      // A long retry (2 s) on /relaxed, so that overtaking does not depend on the machine's speed.
      if (req.path === '/relaxed' && req.attempt === 1) return { status: 503, headers: { 'retry-after': '2' } };
      return req.attempt === 1 ? { status: 503 } : { status: 200 };
    });
    const url = receiver.url;
    const send = async (path: string, body: string, extra: Record<string, string> = {}) =>
      h!.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${url}${path}`, body, ...extra });

    const relaxed = [await send('/relaxed', 'a'), await send('/relaxed', 'b'), await send('/relaxed', 'c')];
    firstIds.add(relaxed[0]!);
    const strict = [
      await send('/strict', 'a'),
      await send('/strict', 'b', { ordering: 'strict' }),
      await send('/strict', 'c', { ordering: 'strict' }),
    ];
    firstIds.add(strict[0]!);
    const afterDead = [await send('/dead', 'a'), await send('/dead', 'b', { ordering: 'strict' })];
    firstIds.add(afterDead[0]!);
    const scheduled = await send('/cancelled', 'a', { send_at: new Date(Date.now() + 86_400_000).toISOString() });
    const afterCancelled = await send('/cancelled', 'b', { ordering: 'strict' });

    await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(
      () => acceptedOrder(r, '/relaxed').length === 3 && acceptedOrder(r, '/strict').length === 3 && acceptedOrder(r, '/dead').length === 1,
      {
        timeoutMs: 30_000,
        message: 'relaxed, strict and after-dead delivered',
      },
    );
    // relaxed: b and c overtook a's retry
    expect(acceptedOrder(r, '/relaxed')).toEqual([relaxed[1], relaxed[2], relaxed[0]]);
    // strict: b and c waited for a's retry, and c for b; neither spent an attempt waiting
    expect(acceptedOrder(r, '/strict')).toEqual(strict);
    // The receiver answers before the outcome is written (group commit): wait for the last one's write.
    const hh = h;
    await waitFor(async () => (await stateOf(hh, strict[2]!)).state === 'sent', { timeoutMs: 10_000, message: 'strict c recorded' });
    for (const id of strict.slice(1)) expect((await stateOf(h, id)).attempts).toBe(1);
    expect(h.seen.deferred.some((e) => e.notificationId === strict[1] && e.predecessorId === strict[0])).toBe(true);
    // a dead predecessor released its successor
    expect((await stateOf(h, afterDead[0]!)).state).toBe('dead');
    expect(acceptedOrder(r, '/dead')).toEqual([afterDead[1]]);

    // a scheduled predecessor holds a strict successor until it is cancelled
    expect(h.seen.deferred.some((e) => e.notificationId === afterCancelled && e.predecessorId === scheduled)).toBe(true);
    expect(acceptedOrder(r, '/cancelled')).toEqual([]);
    await h.db.db
      .updateTable('notifications')
      .set({ state: 'cancelled', next_attempt_at: null, updated_at: new Date() })
      .where('id', '=', scheduled)
      .execute();
    await waitFor(() => acceptedOrder(r, '/cancelled').length === 1, { timeoutMs: 15_000, message: 'released by the cancel' });
    expect(acceptedOrder(r, '/cancelled')).toEqual([afterCancelled]);
  });
});
