/**
 * The endpoint gate against the real PostgreSQL, with an injected clock: two gates stand for two
 * dispatcher processes sharing the same `endpoints` and `delivery_rate_buckets` rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { type EndpointGate, type EndpointHealthConfig, type EndpointTarget, createEndpointGate, endpointId } from '@notify/providers';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb?.close();
});

const never = new AbortController().signal;
const base: EndpointHealthConfig = {
  failureThreshold: 3,
  cooldownMs: 10_000,
  disableAfterMs: 3_600_000,
  endpointRateLimit: undefined,
  tenantRateLimit: undefined,
  stateTtlMs: 0, // read the shared row on every admit: what another process wrote is seen at once
  maxRateWaitMs: 0,
};
const gates = (config: Partial<EndpointHealthConfig>, clock: ManualClock): [EndpointGate, EndpointGate] => {
  const make = () => createEndpointGate({ ...base, ...config }, { db: tdb.db, clock, logger: silentLogger });
  return [make(), make()];
};
const row = async (target: EndpointTarget) =>
  (await tdb.pool.query('SELECT * FROM endpoints WHERE id = $1', [endpointId(target)])).rows[0] as Record<string, unknown> | undefined;
const fail = { kind: 'transient', error: 'HTTP 503', providerStatus: '503' } as const;

describe('endpoint gate', () => {
  it('opens after N consecutive transient failures, lets one probe through per cool-down across processes, and closes on its success', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const [a, b] = gates({}, clock);
    const target: EndpointTarget = { tenantId: 'acme', channel: 'webhook', origin: 'https://hooks.example.com:443', provider: 'primary' };

    // Two failures from one process, a success from the other resets the streak.
    a.observe(target, fail);
    a.observe(target, fail);
    await a.flush();
    b.observe(target, { kind: 'sent', providerStatus: '200' });
    await b.flush();
    expect(await row(target)).toMatchObject({ state: 'ok', consecutive_failures: 0 });
    // A permanent answer says nothing about the endpoint's health.
    a.observe(target, { kind: 'permanent', error: 'HTTP 404', providerStatus: '404' });
    // Three in a row, from two processes, open it.
    a.observe(target, fail);
    await a.flush();
    b.observe(target, fail);
    b.observe(target, fail);
    await b.flush();
    const opened = await row(target);
    expect(opened).toMatchObject({ state: 'open', consecutive_failures: 3, last_error_code: '503' });
    expect((opened!.probe_at as Date).getTime() - (opened!.opened_at as Date).getTime()).toBe(10_000);

    // While open: both processes put deliveries off until the probe time.
    for (const g of [a, b]) {
      expect(await g.admit(target, never)).toEqual({ kind: 'later', until: opened!.probe_at, reason: 'circuit_open' });
    }
    // After the cool-down exactly one of them gets the probe; the other waits one more cool-down.
    clock.advance(10_000);
    const [first, second] = [await a.admit(target, never), await b.admit(target, never)];
    expect(first).toEqual({ kind: 'go', probe: true });
    expect(second).toMatchObject({ kind: 'later', reason: 'circuit_open', until: new Date(clock.now().getTime() + 10_000) });
    // The probe fails: still open, the next probe a cool-down later.
    a.observe(target, fail);
    await a.flush();
    expect(await row(target)).toMatchObject({ state: 'open', consecutive_failures: 4 });
    clock.advance(10_000);
    expect(await b.admit(target, never)).toEqual({ kind: 'go', probe: true });
    // The second probe succeeds: closed for everyone.
    b.observe(target, { kind: 'sent', providerStatus: '200' });
    await b.flush();
    expect(await row(target)).toMatchObject({ state: 'ok', consecutive_failures: 0, probe_at: null, failing_since: null });
    expect(await a.admit(target, never)).toEqual({ kind: 'go', probe: false });
  });

  it('disables an endpoint failing for NOTIFY_ENDPOINT_DISABLE_AFTER, until an operator enables it', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const [a] = gates({ failureThreshold: 1000, disableAfterMs: 5 * 86_400_000 }, clock);
    const target: EndpointTarget = { tenantId: 'acme', channel: 'sms', origin: 'https://gateway.example:443', provider: 'primary' };
    a.observe(target, fail);
    await a.flush();
    clock.advance(5 * 86_400_000 - 1);
    a.observe(target, fail);
    await a.flush();
    expect(await row(target)).toMatchObject({ state: 'ok', consecutive_failures: 2 });
    clock.advance(1);
    a.observe(target, fail);
    await a.flush();
    expect(await row(target)).toMatchObject({ state: 'disabled', disabled_by: 'auto' });
    expect(await a.admit(target, never)).toEqual({ kind: 'disabled' });
    // A success does not re-enable it (only an operator does).
    a.observe(target, { kind: 'sent' });
    await a.flush();
    expect(await a.admit(target, never)).toEqual({ kind: 'disabled' });
  });

  it('shares the rate limits of a tenant and of an endpoint across processes, taking several tokens per statement', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const [a, b] = gates({ endpointRateLimit: { perSecond: 20, burst: 20 }, tenantRateLimit: { perSecond: 1000, burst: 1000 } }, clock);
    const target: EndpointTarget = { tenantId: 'initech', channel: 'webhook', origin: 'https://rate.example:443', provider: 'primary' };
    let granted = 0;
    // 5 simulated seconds in 50 ms steps; each process tries 10 deliveries per step (400/s offered).
    for (let step = 0; step < 100; step++) {
      for (let i = 0; i < 10; i++) {
        for (const g of [a, b]) if ((await g.admit(target, never)).kind === 'go') granted++;
      }
      clock.advance(50);
    }
    // At most burst + rate × time = 20 + 20 × 5 = 120; at least 90 % of it.
    expect(granted).toBeLessThanOrEqual(120);
    expect(granted).toBeGreaterThanOrEqual(108);
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await a.admit(target, never));
    expect(answers.at(-1)).toMatchObject({ kind: 'later', reason: 'rate_limited' });
    // The tenant's own override (tenants.delivery_rate_limit) is read with the endpoint.
    await tdb.pool.query(`INSERT INTO tenants (id, delivery_rate_limit) VALUES ('tight', '1/s,burst=1')`);
    const tight: EndpointTarget = { ...target, tenantId: 'tight' };
    expect((await a.admit(tight, never)).kind).toBe('go');
    expect(await b.admit(tight, never)).toMatchObject({ kind: 'later', reason: 'rate_limited' });
  });
});
