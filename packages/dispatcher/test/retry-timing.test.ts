/**
 * Retries through the delay topics, on real Kafka and the wall clock: no attempt ever reaches the
 * receiver before the `next_attempt_at` the previous attempt recorded, Retry-After raises the
 * delay, and the lateness the dispatcher reports is never negative and stays small.
 *
 * Tolerance: lateness is asserted below 5 s (a gross-stall detector on a shared 2-core machine);
 * the measured values are printed. The guaranteed bound is the tier band (docs/retries.md) plus
 * processing lag.
 */
import { parseStatusEvent } from '@notify/contract';
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

describe('retry timing', () => {
  it('never delivers a retry before it is due, honours Retry-After, and reports small lateness', async () => {
    h = await startHarness({ partitions: 3, retry: { maxAttempts: 5, baseDelayMs: 200, maxDelayMs: 2000, jitter: 0.3 } });
    receiver = await startReceiver((req) => {
      if (req.path === '/throttled' && req.attempt === 1) return { status: 429, headers: { 'retry-after': '1' } };
      if (req.attempt <= 3) return { status: 503 };
      return { status: 200 };
    });
    const ids: string[] = [];
    for (let i = 0; i < 8; i++)
      ids.push(await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/r/${i}`, body: `n${i}` }));
    const throttled = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/throttled`, body: 'slow down' });
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    await waitFor(async () => (await countByState(h as Harness)).sent === 9, { timeoutMs: 30_000, message: '9 sent after retries' });

    // Due times recorded by each failed attempt (status events in the outbox).
    const rows = await h.db.db.selectFrom('outbox').select(['value']).where('topic', '=', 'events').execute();
    const dueAt = new Map<string, number>();
    for (const r of rows) {
      const e = parseStatusEvent(r.value);
      if (e.ok && e.message.type === 'notification.retry_scheduled')
        dueAt.set(`${e.message.id}#${e.message.attempts + 1}`, Date.parse(e.message.next_attempt_at as string));
    }
    const r = receiver;
    const retries = r.received.filter((x) => x.attempt > 1);
    expect(retries).toHaveLength(9 * 3); // every notification fails attempts 1–3 and succeeds on the 4th
    const early = retries.map((x) => ({
      id: x.id,
      attempt: x.attempt,
      marginMs: x.at - (dueAt.get(`${x.id}#${x.attempt}`) ?? Number.NaN),
    }));
    expect(early.every((e) => e.marginMs >= 0)).toBe(true);

    // Retry-After: 1 s raised the first delay of the throttled notification above its 200 ms backoff.
    const t = r.received.filter((x) => x.id === throttled).sort((a, b) => a.attempt - b.attempt);
    expect((t[1]?.at ?? 0) - (t[0]?.at ?? 0)).toBeGreaterThanOrEqual(1000);

    const lateness = h.seen.dispatched.filter((d) => d.topic.includes('.retry.')).map((d) => d.latenessMs);
    expect(lateness.length).toBe(retries.length);
    expect(Math.min(...lateness)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...lateness)).toBeLessThan(5000);
    const sorted = [...lateness].sort((a, b) => a - b);
    console.log(
      `retry lateness over ${sorted.length} retries: p50 ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted.at(-1)} ms; ` +
        `min margin after due ${Math.min(...early.map((e) => e.marginMs))} ms`,
    );
  });
});
