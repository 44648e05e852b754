/**
 * Endpoint health in the dispatcher, on real Kafka and PostgreSQL with a real local receiver:
 * an endpoint that keeps failing opens its circuit, deliveries to it are put off without spending
 * attempts, one probe goes through per cool-down and its success closes the circuit; a disabled
 * endpoint ends new notifications dead (`endpoint_disabled`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger, systemClock } from '@notify/runtime';
import { apiKeyInsert, createApp, generateApiKey, hashApiKey } from '@notify/api';
import { fromKysely } from '@notify/outbox';
import { createEndpointGate, createSmsHttpProvider, endpointId } from '@notify/providers';
import { startHttpReceiver } from '@notify/providers/testing';
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

const COOLDOWN_MS = 1_500;

describe('endpoint health', () => {
  it('opens the circuit after 3 transient failures, defers without spending attempts, probes once per cool-down, closes on success', async () => {
    h = await startHarness({ retry: { baseDelayMs: 100, maxDelayMs: 400, maxAttempts: 50 }, dispatcher: { maxInFlight: 4 } });
    let down = true;
    receiver = await startReceiver(() => ({ status: down ? 503 : 200 }));
    const gate = createEndpointGate(
      {
        failureThreshold: 3,
        cooldownMs: COOLDOWN_MS,
        disableAfterMs: 86_400_000,
        endpointRateLimit: undefined,
        tenantRateLimit: undefined,
        stateTtlMs: 200,
      },
      { db: h.db.db, clock: systemClock, logger: silentLogger },
    );
    const ids: string[] = [];
    for (let i = 0; i < 6; i++)
      ids.push(await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/hook`, body: `n${i}` }));
    await h.startDispatcher({ webhook: createHttpTestProvider() }, {}, { endpoints: gate });

    const id = endpointId({ tenantId: 't1', channel: 'webhook', origin: new URL(receiver.url).origin });
    const endpoint = async () => (await h!.db.pool.query('SELECT * FROM endpoints WHERE id = $1', [id])).rows[0];
    // Two probes fail (the circuit stays open), then the receiver recovers.
    const opened = await waitFor(
      async () => {
        const e = await endpoint();
        return e?.state === 'open' ? (e as Record<string, unknown>) : undefined;
      },
      { timeoutMs: 20_000, message: 'circuit open' },
    );
    const r = receiver;
    const requestsAtOpen = r.received.length;
    const openedAt = new Date(opened.opened_at as string).getTime();
    await waitFor(() => r.received.filter((x) => x.at > openedAt + COOLDOWN_MS - 50).length >= 2, {
      timeoutMs: 20_000,
      message: 'two probes',
    });
    down = false;
    await waitFor(async () => (await Promise.all(ids.map((n) => stateOf(h!, n)))).every((n) => n.state === 'sent'), {
      timeoutMs: 30_000,
      message: 'all sent after the endpoint recovered',
    });
    expect(await endpoint()).toMatchObject({ state: 'ok', consecutive_failures: 0 });

    // Deliveries were put off while the circuit was open, and that spent no attempt: every
    // notification's attempt count is the number of requests the receiver got for it.
    expect(h.seen.deferred.filter((e) => e.reason === 'circuit_open').length).toBeGreaterThan(0);
    for (const n of ids) {
      const row = await stateOf(h, n);
      expect(row.attempts).toBe(r.received.filter((x) => x.id === n).length);
    }
    // While open, requests came one at a time, a cool-down apart (the probes). Deliveries admitted
    // before every process saw the circuit open (within its state cache and the result group)
    // may still arrive just after it: at most maxInFlight of them, before the first probe time.
    const early = r.received.filter((x) => x.at > openedAt && x.at < openedAt + COOLDOWN_MS - 50);
    expect(early.length).toBeLessThanOrEqual(4);
    const probes = r.received.filter((x) => x.at >= openedAt + COOLDOWN_MS - 50 && x.status === 503);
    const gaps = probes.slice(1).map((x, i) => x.at - probes[i]!.at);
    // Each claim moves probe_at one cool-down past the claim, so the k-th probe cannot start before
    // opened_at + k cool-downs. (Not "arrivals a cool-down apart": under load one probe's request
    // can arrive late and the next on time; their gap is then shorter, the claims were not.)
    probes.forEach((x, k) => expect(x.at).toBeGreaterThanOrEqual(openedAt + (k + 1) * COOLDOWN_MS - 50));
    console.log(
      `[endpoints] circuit opened after ${requestsAtOpen} requests (${early.length} more arrived just after); ` +
        `open → first probe ${probes[0]!.at - openedAt} ms, ` +
        `then probe gaps ${gaps.join(', ')} ms (cool-down ${COOLDOWN_MS} ms)`,
    );
  });

  it('ends a notification to a disabled endpoint dead with reason endpoint_disabled, without calling it', async () => {
    h = await startHarness();
    receiver = await startReceiver(() => ({ status: 200 }));
    const origin = new URL(receiver.url).origin;
    const id = endpointId({ tenantId: 't1', channel: 'webhook', origin });
    await h.db.pool.query(
      `INSERT INTO endpoints (id, tenant_id, channel, origin, state, disabled_at, disabled_by) VALUES ($1, 't1', 'webhook', $2, 'disabled', now(), 'operator')`,
      [id, origin],
    );
    const gate = createEndpointGate(
      { failureThreshold: 3, cooldownMs: 1000, disableAfterMs: 86_400_000, endpointRateLimit: undefined, tenantRateLimit: undefined },
      { db: h.db.db, clock: systemClock, logger: silentLogger },
    );
    const n = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/hook`, body: 'x' });
    await h.startDispatcher({ webhook: createHttpTestProvider() }, {}, { endpoints: gate });
    await waitFor(async () => (await stateOf(h!, n)).state === 'dead', { timeoutMs: 20_000, message: 'dead' });
    expect(await stateOf(h, n)).toMatchObject({ dead_reason: 'endpoint_disabled', attempts: 1 });
    expect(receiver.received).toEqual([]);
    // The status event says permanent (contract v1 has no endpoint_disabled), last_error names the reason.
    const events = (await h.db.pool.query(`SELECT value FROM outbox WHERE topic = 'events' ORDER BY id`)).rows.map(
      (x: { value: string }) => JSON.parse(x.value) as Record<string, unknown>,
    );
    expect(events.at(-1)).toMatchObject({ type: 'notification.dead', dead_reason: 'permanent' });
    expect(String(events.at(-1)!.last_error)).toMatch(/^endpoint_disabled: /);
  });
});

describe('operator actions through the API', () => {
  it('disable ends new notifications dead without calling the endpoint; enable lets deliveries through again', async () => {
    h = await startHarness();
    receiver = await startReceiver(() => ({ status: 200 }));
    const key = generateApiKey();
    await apiKeyInsert(fromKysely(h.db.db), { id: key.id, tenantId: 't1', keyHash: hashApiKey(key.key), name: 'ops', now: new Date() });
    const api = createApp({ db: h.db.db, config: { retry: { maxAttempts: 5, defaultTtlMs: 3_600_000 } } });
    const post = (path: string) => api.request(path, { method: 'POST', headers: { authorization: `Bearer ${key.key}` } });
    const gate = createEndpointGate(
      {
        failureThreshold: 3,
        cooldownMs: 1000,
        disableAfterMs: 86_400_000,
        endpointRateLimit: undefined,
        tenantRateLimit: undefined,
        stateTtlMs: 0,
      },
      { db: h.db.db, clock: systemClock, logger: silentLogger },
    );
    // stateTtlMs 0: the gate reads the endpoint before every attempt, so the test needs no wait
    // for the cache (in production a dispatcher follows an operator action within 1 s).
    const to = `${receiver.url}/hook`;
    const id = endpointId({ tenantId: 't1', channel: 'webhook', origin: new URL(receiver.url).origin });
    await h.startDispatcher({ webhook: createHttpTestProvider() }, {}, { endpoints: gate });
    const sentOrDead = async (n: string) =>
      waitFor(
        async () => {
          const row = await stateOf(h!, n);
          return row.state === 'sent' || row.state === 'dead' ? row : undefined;
        },
        { timeoutMs: 20_000, message: `${n} final` },
      );

    // A first delivery creates the endpoint's row (the gate writes every answer).
    const first = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to, body: 'first' });
    expect((await sentOrDead(first)).state).toBe('sent');
    await waitFor(
      async () => (await api.request(`/v1/endpoints/${id}`, { headers: { authorization: `Bearer ${key.key}` } })).status === 200,
      {
        timeoutMs: 10_000,
        message: 'endpoint row',
      },
    );

    expect((await post(`/v1/endpoints/${id}/disable`)).status).toBe(200);
    const blocked = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to, body: 'blocked' });
    expect(await sentOrDead(blocked)).toMatchObject({ state: 'dead', dead_reason: 'endpoint_disabled' });
    expect(receiver.received.map((r) => r.id)).toEqual([first]);

    const enabled = await post(`/v1/endpoints/${id}/enable`);
    expect(await enabled.json()).toMatchObject({ state: 'ok', disabled_by: null });
    const again = await h.enqueue({ tenant_id: 't1', channel: 'webhook', to, body: 'again' });
    expect(await sentOrDead(again)).toMatchObject({ state: 'sent', attempts: 1 });
    expect(receiver.received.map((r) => r.id)).toEqual([first, again]);
  });
});

describe('fallback provider', () => {
  it('answers an attempt through the fallback gateway after the primary failed transiently, and records which one answered', async () => {
    h = await startHarness();
    const [primaryGw, fallbackGw] = await Promise.all([
      startHttpReceiver({ defaultResponse: { status: 503, body: '{"code":20500}' } }),
      startHttpReceiver({ defaultResponse: { status: 201, body: '{}' } }),
    ]);
    try {
      const sms = (url: string) =>
        createSmsHttpProvider(
          { baseUrl: url, accountId: 'AC1', authToken: 't', from: '+15550000000' },
          { clock: systemClock, logger: silentLogger },
        );
      const n = await h.enqueue({ tenant_id: 't1', channel: 'sms', to: '+15550000001', body: 'code 123' });
      await h.startDispatcher({ sms: sms(primaryGw.url) }, {}, { fallbacks: { sms: sms(fallbackGw.url) } });
      await waitFor(async () => (await stateOf(h!, n)).state === 'sent', { timeoutMs: 20_000, message: 'sent' });
      expect(await stateOf(h, n)).toMatchObject({ attempts: 1 });
      expect(primaryGw.requests).toHaveLength(1);
      expect(fallbackGw.requests).toHaveLength(1);
      const attempts = (await h.db.pool.query('SELECT outcome, provider, provider_status FROM attempts WHERE notification_id = $1', [n]))
        .rows;
      expect(attempts).toEqual([{ outcome: 'sent', provider: 'fallback', provider_status: '201' }]);
    } finally {
      await Promise.all([primaryGw.close(), fallbackGw.close()]);
    }
  });
});
