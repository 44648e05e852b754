/**
 * The endpoint gate against the real PostgreSQL, with an injected clock: two gates stand for two
 * dispatcher processes sharing the same `endpoints` and `delivery_rate_buckets` rows.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { type EndpointGate, type EndpointHealthConfig, type EndpointTarget, createEndpointGate, endpointId } from '@notify/providers';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';

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

  it('a streak on a busy endpoint that mostly answers does not open the circuit; the same streak on a mostly failing one does (NOTIFY_ENDPOINT_FAILURE_RATIO)', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const [a] = gates({}, clock);
    const busy: EndpointTarget = { tenantId: 'acme', channel: 'webhook', origin: 'https://busy.example:443', provider: 'primary' };
    // Ten seconds of 9 answers out of 10 (one group every 100 ms), then a streak of 4 failures.
    for (let i = 0; i < 100; i++) {
      a.observe(busy, i % 10 === 0 ? fail : { kind: 'sent', providerStatus: '200' });
      if (i % 5 === 4) {
        await a.flush();
        clock.advance(100);
      }
    }
    for (let i = 0; i < 4; i++) a.observe(busy, fail);
    await a.flush();
    expect(await row(busy)).toMatchObject({ state: 'ok', consecutive_failures: 4 });
    // The failures keep coming and nothing succeeds: the recent ratio passes one half within half a minute.
    let opened = false;
    for (let s = 0; s < 30 && !opened; s++) {
      clock.advance(1_000);
      a.observe(busy, fail);
      await a.flush();
      opened = (await row(busy))!.state === 'open';
    }
    expect(opened).toBe(true);
    const r = (await row(busy))!;
    expect(Number(r.health_failures) / Number(r.health_attempts)).toBeGreaterThanOrEqual(0.5);

    // A ratio of 0 leaves the streak alone to decide, as before 0200.
    const [b] = gates({ failureRatio: 0 }, clock);
    const other: EndpointTarget = { ...busy, origin: 'https://busy-too.example:443' };
    for (let i = 0; i < 50; i++) b.observe(other, { kind: 'sent', providerStatus: '200' });
    for (let i = 0; i < 3; i++) b.observe(other, fail);
    await b.flush();
    expect(await row(other)).toMatchObject({ state: 'open', consecutive_failures: 3 });
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

describe('endpoint gate, the less travelled paths', () => {
  const target = (origin: string, tenantId = 'paths'): EndpointTarget => ({ tenantId, channel: 'webhook', origin, provider: 'primary' });

  it('races for the probe: of concurrent admits at probe time exactly one goes, across processes and within one', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    const [a, b] = gates({}, clock);
    const t = target('https://race.example:443');
    for (let i = 0; i < 3; i++) a.observe(t, fail);
    await a.flush();
    clock.advance(10_000);
    const answers = await Promise.all([a.admit(t, never), b.admit(t, never), a.admit(t, never), b.admit(t, never)]);
    expect(answers.filter((x) => x.kind === 'go')).toEqual([{ kind: 'go', probe: true }]);
    for (const x of answers.filter((y) => y.kind !== 'go'))
      expect(x).toEqual({ kind: 'later', reason: 'circuit_open', until: new Date(clock.now().getTime() + 10_000) });
  });

  it('lets a delivery through without a probe when another process closed the circuit after this one read it open', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    // a trusts what it read for a minute (a stale cache), b reads every time.
    const a = createEndpointGate({ ...base, stateTtlMs: 60_000 }, { db: tdb.db, clock, logger: silentLogger });
    const [b] = gates({}, clock);
    const t = target('https://stale.example:443');
    for (let i = 0; i < 3; i++) b.observe(t, fail);
    await b.flush();
    expect((await a.admit(t, never)).kind).toBe('later'); // a caches "open"
    clock.advance(10_000);
    expect(await b.admit(t, never)).toEqual({ kind: 'go', probe: true });
    b.observe(t, { kind: 'sent', providerStatus: '200' }); // the probe succeeds: written at once, not a group later
    await b.flush();
    expect(await row(t)).toMatchObject({ state: 'ok' });
    clock.advance(10_000);
    // a still believes it open and past its probe time; the claim finds it closed: go, not a probe.
    expect(await a.admit(t, never)).toEqual({ kind: 'go', probe: false });
  });

  it('closes the circuit in its own cache at once when a probe succeeds', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    const a = createEndpointGate({ ...base, stateTtlMs: 60_000, flushDelayMs: 60_000 }, { db: tdb.db, clock, logger: silentLogger });
    const t = target('https://probe-ok.example:443');
    for (let i = 0; i < 3; i++) a.observe(t, fail);
    await a.flush();
    clock.advance(10_000);
    expect(await a.admit(t, never)).toEqual({ kind: 'go', probe: true });
    a.observe(t, { kind: 'sent', providerStatus: '200' });
    expect(await a.admit(t, never)).toEqual({ kind: 'go', probe: false });
    // The success was written without waiting for the (one-minute) group delay.
    await waitForRow(t, (r) => r.state === 'ok');
  });

  it('treats an operator-disabled endpoint as disabled and keeps it so whatever it answers', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    const [a] = gates({}, clock);
    const t = target('https://operator.example:443');
    await tdb.pool.query(
      `INSERT INTO endpoints (id, tenant_id, channel, origin, state, disabled_at, disabled_by) VALUES ($1, $2, 'webhook', $3, 'disabled', $4, 'operator')`,
      [endpointId(t), t.tenantId, t.origin, clock.now()],
    );
    expect(await a.admit(t, never)).toEqual({ kind: 'disabled' });
    for (let i = 0; i < 5; i++) a.observe(t, fail);
    await a.flush();
    a.observe(t, { kind: 'sent' });
    await a.flush();
    expect(await row(t)).toMatchObject({ state: 'disabled', disabled_by: 'operator', consecutive_failures: 0 });
    expect(await a.admit(t, never)).toEqual({ kind: 'disabled' });
  });

  it('drops local tokens after 1 s, so a process cannot hoard a burst, and shares one take between concurrent admits', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    const [a] = gates({ endpointRateLimit: { perSecond: 100, burst: 100 } }, clock);
    const t = target('https://tokens.example:443');
    const bucket = async () =>
      (
        await tdb.pool.query('SELECT tokens, updated_at, granted FROM delivery_rate_buckets WHERE bucket = $1', [
          `endpoint:${endpointId(t)}`,
        ])
      ).rows[0] as { tokens: number; updated_at: Date; granted: number };
    // Three concurrent admits: one statement takes 10 tokens (100 ms worth) for all of them.
    expect((await Promise.all([a.admit(t, never), a.admit(t, never), a.admit(t, never)])).map((x) => x.kind)).toEqual(['go', 'go', 'go']);
    expect(await bucket()).toMatchObject({ tokens: 90, granted: 10, updated_at: clock.now() });
    // Within the second: the 7 tokens left locally serve, no statement.
    clock.advance(999);
    expect((await a.admit(t, never)).kind).toBe('go');
    expect((await bucket()).updated_at).toEqual(new Date('2026-05-02T12:00:00Z'));
    // After it they are gone: the next admit takes again.
    clock.advance(1);
    expect((await a.admit(t, never)).kind).toBe('go');
    expect(await bucket()).toMatchObject({ granted: 10, updated_at: clock.now() });
  });

  it('stops waiting for a token when the signal aborts, and puts the delivery off', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    const [a] = gates({ endpointRateLimit: { perSecond: 1, burst: 1 }, maxRateWaitMs: 5_000 }, clock);
    const t = target('https://abort.example:443');
    expect((await a.admit(t, never)).kind).toBe('go');
    const controller = new AbortController();
    const waiting = a.admit(t, controller.signal); // the bucket is empty for 1 s: it waits (the clock stands still)
    setTimeout(() => controller.abort(), 50);
    expect(await waiting).toEqual({ kind: 'later', reason: 'rate_limited', until: new Date(clock.now().getTime() + 1_000) });
    // A signal aborted before the wait: no wait at all.
    expect(await a.admit(t, AbortSignal.abort())).toMatchObject({ kind: 'later', reason: 'rate_limited' });
  });

  it('falls back to the default rate limit when a stored override does not parse', async () => {
    const clock = new ManualClock('2026-05-02T12:00:00Z');
    const [a] = gates({ endpointRateLimit: { perSecond: 1, burst: 1 }, tenantRateLimit: { perSecond: 1000, burst: 1000 } }, clock);
    const t = target('https://bad-override.example:443', 'bad-override');
    await tdb.pool.query(`INSERT INTO tenants (id, delivery_rate_limit) VALUES ('bad-override', 'lots')`);
    await tdb.pool.query(`INSERT INTO endpoints (id, tenant_id, channel, origin, rate_limit) VALUES ($1, $2, 'webhook', $3, 'plenty')`, [
      endpointId(t),
      t.tenantId,
      t.origin,
    ]);
    expect((await a.admit(t, never)).kind).toBe('go');
    expect(await a.admit(t, never)).toMatchObject({ kind: 'later', reason: 'rate_limited' }); // the default's burst of 1
  });
});

describe('endpoint gate when PostgreSQL refuses', () => {
  let broken: TestDatabase;
  beforeAll(async () => {
    broken = await createTestDatabase();
  });
  afterAll(async () => {
    await broken?.close();
  });

  it('puts a delivery off for a second when taking tokens fails, and logs it', async () => {
    const clock = new ManualClock('2026-05-03T12:00:00Z');
    const logs: string[] = [];
    const logger = { ...silentLogger, warn: (_o: unknown, msg?: string) => void logs.push(String(msg)) };
    const g = createEndpointGate({ ...base, endpointRateLimit: { perSecond: 10, burst: 10 } }, { db: broken.db, clock, logger });
    const t: EndpointTarget = { tenantId: 'x', channel: 'webhook', origin: 'https://refused.example:443', provider: 'primary' };
    // Every write to the buckets fails from now on (reads of endpoints still work).
    await broken.pool.query('ALTER TABLE delivery_rate_buckets ADD CONSTRAINT test_refuse CHECK (false) NOT VALID');
    expect(await g.admit(t, never)).toEqual({ kind: 'later', reason: 'rate_limited', until: new Date(clock.now().getTime() + 1_000) });
    expect(logs).toEqual(['endpoint health: taking rate-limit tokens failed']);
    // Within that second it does not ask again.
    expect(await g.admit(t, never)).toMatchObject({ kind: 'later', reason: 'rate_limited' });
    expect(logs).toHaveLength(1);
    // Once the database takes writes again, so does the gate.
    await broken.pool.query('ALTER TABLE delivery_rate_buckets DROP CONSTRAINT test_refuse');
    clock.advance(1_000);
    expect((await g.admit(t, never)).kind).toBe('go');
  });

  it('loses a group of results when writing it fails (logged), and keeps working', async () => {
    const clock = new ManualClock('2026-05-03T12:00:00Z');
    const logs: string[] = [];
    const logger = { ...silentLogger, warn: (_o: unknown, msg?: string) => void logs.push(String(msg)) };
    const g = createEndpointGate(base, { db: broken.db, clock, logger });
    const t: EndpointTarget = { tenantId: 'x', channel: 'webhook', origin: 'https://unwritten.example:443', provider: 'primary' };
    await broken.pool.query('ALTER TABLE endpoints ADD CONSTRAINT test_refuse CHECK (false) NOT VALID');
    g.observe(t, fail);
    await expect(g.flush()).resolves.toBeUndefined();
    expect(logs).toEqual(['endpoint health: writing results failed']);
    await broken.pool.query('ALTER TABLE endpoints DROP CONSTRAINT test_refuse');
    g.observe(t, fail);
    await g.flush();
    const { rows } = await broken.pool.query('SELECT consecutive_failures FROM endpoints WHERE id = $1', [endpointId(t)]);
    expect(rows).toEqual([{ consecutive_failures: 1 }]); // the lost group is not counted
  });

  it('rejects admit when the endpoint cannot be read (the handler treats it like any database failure)', async () => {
    const clock = new ManualClock('2026-05-03T12:00:00Z');
    const g = createEndpointGate(base, { db: broken.db, clock, logger: silentLogger });
    const t: EndpointTarget = { tenantId: 'x', channel: 'webhook', origin: 'https://unread.example:443', provider: 'primary' };
    await broken.pool.query('ALTER TABLE endpoints RENAME TO endpoints_away');
    try {
      await expect(g.admit(t, never)).rejects.toThrow(/endpoints/);
    } finally {
      await broken.pool.query('ALTER TABLE endpoints_away RENAME TO endpoints');
    }
    expect(await g.admit(t, never)).toEqual({ kind: 'go', probe: false });
  });
});

async function waitForRow(t: EndpointTarget, ok: (r: Record<string, unknown>) => boolean): Promise<void> {
  await waitFor(
    async () => {
      const r = await row(t);
      return r !== undefined && ok(r);
    },
    { timeoutMs: 5_000, message: 'endpoint row' },
  );
}
