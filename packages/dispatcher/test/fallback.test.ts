/**
 * The fallback provider (issue 15 item 8) through the dispatcher, on real Kafka and PostgreSQL
 * with two real local SMTP servers: the fallback answers an attempt after the primary's transient
 * refusal, and when the primary's circuit is open, without a call to the primary; the attempt row
 * records which provider answered.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger, systemClock } from '@notify/runtime';
import { createEndpointGate, createSmtpProvider, endpointId, urlOrigin } from '@notify/providers';
import { type SmtpSink, startSmtpSink } from '@notify/providers/testing';
import { waitFor } from '../../../test/support/wait.js';
import { stateOf, startHarness, type Harness } from './support/harness.js';

let h: Harness | undefined;
let sinks: SmtpSink[] = [];
afterEach(async () => {
  await h?.close();
  await Promise.all(sinks.map((s) => s.close()));
  h = undefined;
  sinks = [];
});

const smtp = (sink: SmtpSink) => createSmtpProvider({ url: sink.url, from: 'Notify <notify@example.com>' }, { logger: silentLogger });

async function attemptsOf(n: string) {
  return (
    await h!.db.pool.query('SELECT outcome, provider, provider_status FROM attempts WHERE notification_id = $1 ORDER BY attempt', [n])
  ).rows as { outcome: string; provider: string | null; provider_status: string | null }[];
}

describe('SMTP fallback provider', () => {
  it('answers the attempt through the fallback server after the primary refused transiently (451)', async () => {
    h = await startHarness();
    const [primary, fallback] = (sinks = await Promise.all([startSmtpSink(), startSmtpSink()]));
    primary!.script({ stage: 'rcpt', code: 451, message: '4.3.0 try again later' });
    const n = await h.enqueue({ tenant_id: 't1', channel: 'email', to: 'ada@example.com', subject: 'Hi', body: 'code 123' });
    await h.startDispatcher({ email: smtp(primary!) }, {}, { fallbacks: { email: smtp(fallback!) } });
    await waitFor(async () => (await stateOf(h!, n)).state === 'sent', { timeoutMs: 30_000, message: 'sent' });
    expect(await stateOf(h, n)).toMatchObject({ attempts: 1 });
    expect(primary!.transactions).toBe(1);
    expect(primary!.messages).toHaveLength(0);
    expect(fallback!.messages.map((m) => m.to)).toEqual([['ada@example.com']]);
    expect(await attemptsOf(n)).toEqual([{ outcome: 'sent', provider: 'fallback', provider_status: expect.stringMatching(/^250/) }]);
  });

  it("sends through the fallback without calling the primary while the primary's circuit is open", async () => {
    h = await startHarness();
    const [primary, fallback] = (sinks = await Promise.all([startSmtpSink(), startSmtpSink()]));
    const origin = urlOrigin(primary!.url)!;
    // The primary's endpoint for this tenant is open, its next probe an hour away.
    await h.db.pool.query(
      `INSERT INTO endpoints (id, tenant_id, channel, origin, state, consecutive_failures, failing_since, opened_at, probe_at)
       VALUES ($1, 't1', 'email', $2, 'open', 5, now(), now(), now() + interval '1 hour')`,
      [endpointId({ tenantId: 't1', channel: 'email', origin }), origin],
    );
    const gate = createEndpointGate(
      { failureThreshold: 5, cooldownMs: 3_600_000, disableAfterMs: 86_400_000, endpointRateLimit: undefined, tenantRateLimit: undefined },
      { db: h.db.db, clock: systemClock, logger: silentLogger },
    );
    const n = await h.enqueue({ tenant_id: 't1', channel: 'email', to: 'grace@example.com', subject: 'Hi', body: 'code 456' });
    await h.startDispatcher({ email: smtp(primary!) }, {}, { endpoints: gate, fallbacks: { email: smtp(fallback!) } });
    await waitFor(async () => (await stateOf(h!, n)).state === 'sent', { timeoutMs: 30_000, message: 'sent' });
    expect(await stateOf(h, n)).toMatchObject({ attempts: 1 });
    expect(primary!.transactions).toBe(0);
    expect(fallback!.messages.map((m) => m.to)).toEqual([['grace@example.com']]);
    expect(await attemptsOf(n)).toEqual([{ outcome: 'sent', provider: 'fallback', provider_status: expect.stringMatching(/^250/) }]);
  });
});
