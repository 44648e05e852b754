import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@notify/cli';
import { silentLogger, systemClock } from '@notify/runtime';
import { createProviders, createWebhookProvider, withRateLimit } from '@notify/providers';
import { type HttpReceiver, contractDelivery, startHttpReceiver } from '@notify/providers/testing';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';

// The deterministic schedule (exact grant times, sliding-window maximum) is proven with a
// ManualClock in src/provider/rate-limit.test.ts. Here the same bucket runs on the real clock in
// front of a real receiver; the only timing assertion is a lower bound the limiter guarantees
// by construction (it cannot be faster), never an upper bound that passes by luck.

let receiver: HttpReceiver;
let tdb: TestDatabase;
beforeAll(async () => {
  receiver = await startHttpReceiver();
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await receiver.close();
  await tdb.close();
});

describe('rate limit on the real clock', () => {
  it('a burst of 200 against NOTIFY_RATE_LIMIT_WEBHOOK=50/s,burst=10: all sent, none refused, no faster than the limit', async () => {
    receiver.requests.length = 0;
    const config = loadConfig({ NOTIFY_RATE_LIMIT_WEBHOOK: '50/s,burst=10', NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' });
    const { webhook } = createProviders(config, { db: tdb.db, clock: systemClock, logger: silentLogger });
    const deliveries = Array.from({ length: 200 }, () => contractDelivery({ channel: 'webhook', to: `${receiver.url}/rl` }));
    const started = systemClock.now().getTime();
    const results = await Promise.all(deliveries.map((d) => webhook!.send(d, new AbortController().signal)));
    const elapsed = systemClock.now().getTime() - started;
    await webhook!.close?.();

    expect(results.filter((r) => r.kind !== 'sent')).toEqual([]);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(200);
    // 10 at once, then one per 20 ms: the 200th cannot start before (200 - 10) × 20 ms = 3.8 s.
    expect(elapsed).toBeGreaterThanOrEqual(3_800);
    console.info(`[rate-limit] 200 webhooks at 50/s burst 10: ${elapsed} ms (floor 3800 ms)`);
  });

  it('admit() keeps the wait out of the per-attempt timeout; without it the wait counts against the timeout', async () => {
    const limit = { perSecond: 10, burst: 1 };
    const make = () =>
      withRateLimit(limit, { clock: systemClock })(
        createWebhookProvider({ allowCidrs: ['127.0.0.1/32'] }, { clock: systemClock, logger: silentLogger }),
      );
    const to = `${receiver.url}/admit`;

    // With admit (the dispatcher's way): 30 sends at 10/s take ≥ 2.9 s, and each attempt still gets
    // its own 2 s. The timeout is shorter than the wait (so counting the wait would fail the later
    // sends) and long enough for a local POST on a loaded machine (500 ms once was not, 1 run in 9).
    const sends = 30;
    const timeoutMs = 2_000;
    const admitted = make();
    const shutdown = new AbortController().signal;
    const withAdmit = await Promise.all(
      Array.from({ length: sends }, async () => {
        const d = contractDelivery({ channel: 'webhook', to });
        expect(await admitted.admit!(d, shutdown)).toBe(true);
        return admitted.send(d, AbortSignal.timeout(timeoutMs));
      }),
    );
    expect(withAdmit.map((r) => r.kind)).toEqual(Array(sends).fill('sent'));

    // Without admit the last grant is ≥ 2.9 s away, past its 2 s timeout: it must come back transient, never thrown.
    const bare = make();
    const withoutAdmit = await Promise.all(
      Array.from({ length: sends }, () => bare.send(contractDelivery({ channel: 'webhook', to }), AbortSignal.timeout(timeoutMs))),
    );
    expect(withoutAdmit.at(-1)).toEqual({ kind: 'transient', error: 'timeout', providerStatus: 'rate_limited' });
    // The others are sent, or transient: a send granted just before its 2 s deadline may time out in
    // the HTTP call on a loaded machine ("timeout" without rate_limited). What never happens is a throw or a permanent.
    expect(withoutAdmit.every((r) => r.kind === 'sent' || (r.kind === 'transient' && r.error === 'timeout'))).toBe(true);
    await admitted.close?.();
    await bare.close?.();
  });
});
