import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { sealSecret, silentLogger, systemClock } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { type Delivery, type Provider, type ResolvedAddress, createTenantSecretSource, createWebhookProvider } from '@notify/providers';
import { type SqlExecutor, fromKysely } from '@notify/outbox';
import { verifyWebhookSignature } from '@notify/providers/testing';
import { type HttpReceiver, contractDelivery, startHttpReceiver } from '@notify/providers/testing';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';

const SECRET = 'whsec_' + Buffer.from('global secret key for tests').toString('base64');
const never = () => new AbortController().signal;

let receiver: HttpReceiver;
const cleanups: (() => Promise<unknown> | undefined)[] = [];
beforeAll(async () => {
  receiver = await startHttpReceiver();
});
afterAll(async () => {
  await receiver.close();
});
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
  receiver.requests.length = 0;
});

function webhook(options: Parameters<typeof createWebhookProvider>[0], clock = systemClock): Provider {
  const provider = createWebhookProvider(options, { clock, logger: silentLogger });
  cleanups.push(() => provider.close?.());
  return provider;
}

function delivery(to: string, overrides: Partial<Delivery> = {}): Delivery {
  return contractDelivery({ channel: 'webhook', to }, overrides);
}

describe('webhook payload and Standard Webhooks signing', () => {
  it('POSTs the notification as JSON, signed with the global secret; the receiver verifies it with verifyWebhookSignature', async () => {
    const provider = webhook({ allowCidrs: ['127.0.0.1/32'], signingSecret: SECRET });
    const d = delivery(`${receiver.url}/hooks?x=1`, { attempt: 3, data: { order: 7 }, metadata: { team: 'a' } });
    expect(await provider.send(d, never())).toEqual({ kind: 'sent', providerStatus: '200' });
    const [req] = receiver.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/hooks?x=1');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.headers['webhook-id']).toBe(d.id);
    const verified = verifyWebhookSignature({ secret: SECRET, headers: req!.headers, body: req!.body, now: new Date() });
    expect(verified).toMatchObject({ ok: true, id: d.id });
    const payload = JSON.parse(req!.body);
    expect(payload).toEqual({
      id: d.id,
      tenant_id: d.tenantId,
      body: d.body,
      data: { order: 7 },
      metadata: { team: 'a' },
      attempt: 3,
      created_at: d.createdAt.toISOString(),
      timestamp: new Date(Number(req!.headers['webhook-timestamp']) * 1000).toISOString(),
    });
    // A tampered body does not verify.
    expect(
      verifyWebhookSignature({
        secret: SECRET,
        headers: req!.headers,
        body: req!.body.replace('"attempt":3', '"attempt":4'),
        now: new Date(),
      }).ok,
    ).toBe(false);
  });

  it('keeps webhook-id across attempts and signs each attempt with its own timestamp', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const provider = webhook({ allowCidrs: ['127.0.0.1/32'], signingSecret: SECRET }, clock);
    const d = delivery(receiver.url);
    await provider.send(d, never());
    clock.advance(60_000);
    await provider.send({ ...d, attempt: 2 }, never());
    const [a, b] = receiver.requests;
    expect(a!.headers['webhook-id']).toBe(d.id);
    expect(b!.headers['webhook-id']).toBe(d.id);
    expect(Number(b!.headers['webhook-timestamp']) - Number(a!.headers['webhook-timestamp'])).toBe(60);
    expect(verifyWebhookSignature({ secret: SECRET, headers: b!.headers, body: b!.body, now: clock.now() }).ok).toBe(true);
  });

  it('sends no signature header when no secret applies', async () => {
    const provider = webhook({ allowCidrs: ['127.0.0.1/32'] });
    await provider.send(delivery(receiver.url), never());
    expect(receiver.requests[0]!.headers['webhook-signature']).toBeUndefined();
    expect(receiver.requests[0]!.headers['webhook-id']).toBeDefined();
  });

  describe('per-tenant secrets (tenants.webhook_signing_secret)', () => {
    let tdb: TestDatabase;
    beforeAll(async () => {
      tdb = await createTestDatabase();
    });
    afterAll(async () => {
      await tdb.close();
    });

    it("a tenant's own secret overrides the global one; a tenant without one gets the global secret", async () => {
      const tenantSecret = 'raw-tenant-secret';
      await tdb.pool.query('INSERT INTO tenants (id, webhook_signing_secret) VALUES ($1, $2), ($3, NULL)', [
        'acme',
        tenantSecret,
        'globex',
      ]);
      const provider = webhook({
        allowCidrs: ['127.0.0.1/32'],
        signingSecret: SECRET,
        tenantSecret: createTenantSecretSource({ db: tdb.db, clock: systemClock }),
      });
      await provider.send(delivery(receiver.url, { tenantId: 'acme' }), never());
      await provider.send(delivery(receiver.url, { tenantId: 'globex' }), never());
      await provider.send(delivery(receiver.url, { tenantId: 'no-row' }), never());
      const [acme, globex, noRow] = receiver.requests;
      const check = (secret: string, r: typeof acme) =>
        verifyWebhookSignature({ secret, headers: r!.headers, body: r!.body, now: new Date() }).ok;
      expect(check(tenantSecret, acme)).toBe(true);
      expect(check(SECRET, acme)).toBe(false);
      expect(check(SECRET, globex)).toBe(true);
      expect(check(SECRET, noRow)).toBe(true);
    });

    it('after a rotation both sealed secrets sign in one header until the grace period ends; the receiver accepts either', async () => {
      const key = randomBytes(32);
      const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'));
      const oldSecret = 'whsec_' + randomBytes(32).toString('base64');
      const newSecret = 'whsec_' + randomBytes(32).toString('base64');
      await tdb.pool.query(
        'INSERT INTO tenant_webhook_secrets (tenant_id, sealed, created_at, expires_at) VALUES ($1, $2, now(), $3), ($1, $4, now(), NULL)',
        ['rotor', sealSecret(key, oldSecret, 'rotor'), new Date(clock.now().getTime() + 60_000), sealSecret(key, newSecret, 'rotor')],
      );
      const provider = webhook(
        { allowCidrs: ['127.0.0.1/32'], tenantSecret: createTenantSecretSource({ db: tdb.db, clock, secretsKey: key }) },
        clock,
      );
      await provider.send(delivery(receiver.url, { tenantId: 'rotor' }), never());
      clock.advance(60_001);
      await provider.send(delivery(receiver.url, { tenantId: 'rotor' }), never());
      const [during, after] = receiver.requests;
      expect(String(during!.headers['webhook-signature']).split(' ')).toHaveLength(2);
      const check = (secret: string, r: typeof during) =>
        verifyWebhookSignature({ secret, headers: r!.headers, body: r!.body, now: clock.now() }).ok;
      expect([check(oldSecret, during), check(newSecret, during)]).toEqual([true, true]);
      expect(String(after!.headers['webhook-signature']).split(' ')).toHaveLength(1);
      expect([check(oldSecret, after), check(newSecret, after)]).toEqual([false, true]);

      // Sealed secrets without NOTIFY_SECRETS_KEY: transient, nothing sent unsigned.
      const keyless = webhook({ allowCidrs: ['127.0.0.1/32'], tenantSecret: createTenantSecretSource({ db: tdb.db, clock }) }, clock);
      expect(await keyless.send(delivery(receiver.url, { tenantId: 'rotor' }), never())).toMatchObject({
        kind: 'transient',
        error: expect.stringMatching(/NOTIFY_SECRETS_KEY is not set/),
      });
      expect(receiver.requests).toHaveLength(2);
    });

    it('concurrent lookups of one tenant share one query; a failed one is not remembered', async () => {
      await tdb.pool.query('INSERT INTO tenants (id, webhook_signing_secret) VALUES ($1, $2)', ['crowd', 'crowd-secret']);
      const statements: string[] = [];
      let failNext = false;
      const counted: SqlExecutor = {
        query: async (text, values) => {
          statements.push(text);
          if (failNext) {
            failNext = false;
            throw new Error('connection terminated');
          }
          return fromKysely(tdb.db).query(text, values);
        },
      };
      const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'));
      const source = createTenantSecretSource({ db: counted, clock, ttlMs: 30_000 });
      // A cold process's first sends: twenty at once, one query.
      expect(await Promise.all(Array.from({ length: 20 }, () => source('crowd')))).toEqual(
        Array.from({ length: 20 }, () => ['crowd-secret']),
      );
      expect(statements).toHaveLength(1);
      // Expired: the next wave shares one new query; when it fails, every one of them fails …
      clock.advance(30_000);
      failNext = true;
      const wave = await Promise.allSettled(Array.from({ length: 5 }, () => source('crowd')));
      expect(wave.map((r) => r.status)).toEqual(Array.from({ length: 5 }, () => 'rejected'));
      expect(statements).toHaveLength(2);
      // … and the next send asks again instead of repeating the failure.
      expect(await source('crowd')).toEqual(['crowd-secret']);
      expect(statements).toHaveLength(3);
    });

    it('a secret lookup failure is transient and sends nothing (never unsigned by accident)', async () => {
      const provider = webhook({
        allowCidrs: ['127.0.0.1/32'],
        signingSecret: SECRET,
        tenantSecret: async () => {
          throw new Error('connection terminated');
        },
      });
      const result = await provider.send(delivery(receiver.url), never());
      expect(result).toMatchObject({ kind: 'transient', error: expect.stringMatching(/signing secret/) });
      expect(receiver.requests).toHaveLength(0);
    });
  });
});

describe('webhook failure mapping against a real receiver', () => {
  const provider = () => webhook({ allowCidrs: ['127.0.0.1/32'] });

  it.each([
    [200, 'sent'],
    [201, 'sent'],
    [204, 'sent'],
    [301, 'permanent'],
    [302, 'permanent'],
    [307, 'permanent'],
    [308, 'permanent'],
    [400, 'permanent'],
    [401, 'permanent'],
    [403, 'permanent'],
    [404, 'permanent'],
    [410, 'permanent'],
    [413, 'permanent'],
    [422, 'permanent'],
    [408, 'transient'],
    [425, 'transient'],
    [429, 'transient'],
    [500, 'transient'],
    [502, 'transient'],
    [503, 'transient'],
    [504, 'transient'],
  ] as const)('HTTP %i → %s', async (status, kind) => {
    receiver.script({ status, headers: status >= 300 && status < 400 ? { location: 'http://10.0.0.1/' } : {} });
    const result = await provider().send(delivery(receiver.url), never());
    expect(result).toMatchObject({ kind, providerStatus: String(status) });
    if (status >= 300 && status < 400) expect(result).toMatchObject({ error: expect.stringMatching(/redirects are never followed/) });
  });

  it('honours Retry-After in seconds and as an HTTP date, from the injected clock', async () => {
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const p = webhook({ allowCidrs: ['127.0.0.1/32'] }, clock);
    receiver.script(
      { status: 429, headers: { 'retry-after': '30' } },
      { status: 503, headers: { 'retry-after': 'Fri, 01 May 2026 12:05:00 GMT' } },
      { status: 503, headers: { 'retry-after': 'soon' } },
    );
    expect(await p.send(delivery(receiver.url), never())).toEqual({
      kind: 'transient',
      error: 'webhook receiver failed: HTTP 429',
      providerStatus: '429',
      notBefore: new Date('2026-05-01T12:00:30Z'),
    });
    expect(await p.send(delivery(receiver.url), never())).toMatchObject({ notBefore: new Date('2026-05-01T12:05:00Z') });
    const third = await p.send(delivery(receiver.url), never());
    expect(third.kind).toBe('transient');
    expect('notBefore' in third).toBe(false);
  });

  it('a connection reset, a closed port and a DNS failure are transient, with the errno', async () => {
    receiver.script('reset');
    expect(await provider().send(delivery(receiver.url), never())).toMatchObject({ kind: 'transient', providerStatus: 'ECONNRESET' });
    const gone = await startHttpReceiver();
    await gone.close();
    expect(await provider().send(delivery(gone.url), never())).toMatchObject({ kind: 'transient', providerStatus: 'ECONNREFUSED' });
    const dns = await provider().send(delivery('http://no-such-host.invalid/hook'), never());
    expect(dns).toMatchObject({ kind: 'transient', providerStatus: 'ENOTFOUND' });
  });

  it('judges an answer by its status once it arrived, however its body ends (cut off, or still arriving at the timeout)', async () => {
    // Found from the outside: a receiver that answered 200 and then reset the connection, or whose
    // body was still trickling in at the timeout, got the notification again and again (transient
    // ECONNRESET / timeout), and one that always did so ended dead 'exhausted' although it accepted
    // every attempt.
    const clock = new ManualClock('2026-05-01T12:00:00Z');
    const p = webhook({ allowCidrs: ['127.0.0.1/32'], timeoutMs: 300 }, clock);
    receiver.script(
      { status: 200, body: 'accep', bodyEnd: 'reset' },
      { status: 200, body: 'still coming', bodyEnd: 'never' },
      { status: 202, body: 'still coming', bodyEnd: 'never' },
      { status: 503, headers: { 'retry-after': '30' }, body: 'x', bodyEnd: 'reset' },
      { status: 410, body: 'gone', bodyEnd: 'never' },
    );
    expect(await p.send(delivery(receiver.url), never())).toEqual({ kind: 'sent', providerStatus: '200' });
    // The adapter's own timeoutMs ends the body, then the dispatcher's signal does.
    expect(await p.send(delivery(receiver.url), never())).toEqual({ kind: 'sent', providerStatus: '200' });
    expect(await p.send(delivery(receiver.url), AbortSignal.timeout(100))).toEqual({ kind: 'sent', providerStatus: '202' });
    expect(await p.send(delivery(receiver.url), never())).toEqual({
      kind: 'transient',
      error: 'webhook receiver failed: HTTP 503',
      providerStatus: '503',
      notBefore: new Date('2026-05-01T12:00:30Z'),
    });
    expect(await p.send(delivery(receiver.url), never())).toMatchObject({ kind: 'permanent', providerStatus: '410' });
    await waitFor(() => receiver.open === 0, { timeoutMs: 5_000, message: 'the trickling answers to be cut off' });
    // Before an answer, a reset and a timeout are still transient.
    receiver.script('reset', 'hang');
    expect(await p.send(delivery(receiver.url), never())).toMatchObject({ kind: 'transient', providerStatus: 'ECONNRESET' });
    expect(await p.send(delivery(receiver.url), never())).toMatchObject({ kind: 'transient', providerStatus: 'timeout' });
  });

  it('reads at most maxResponseBytes of an endless answer, then drops the connection', async () => {
    receiver.script('endless');
    const p = webhook({ allowCidrs: ['127.0.0.1/32'], maxResponseBytes: 1024 });
    expect(await p.send(delivery(receiver.url), never())).toEqual({ kind: 'sent', providerStatus: '200' });
    await waitFor(() => receiver.open === 0, { timeoutMs: 5_000, message: 'the endless response to be cut off' });
  });

  it("its own timeoutMs ends a hung request as transient 'timeout'", async () => {
    receiver.script('hang');
    const p = webhook({ allowCidrs: ['127.0.0.1/32'], timeoutMs: 200 });
    expect(await p.send(delivery(receiver.url), never())).toEqual({ kind: 'transient', error: 'timeout', providerStatus: 'timeout' });
  });
});

describe('SSRF policy', () => {
  // A resolver that gives attacker-controlled names hostile answers; everything else goes to DNS as usual.
  const hostile: Record<string, ResolvedAddress[]> = {
    'metadata.attacker.test': [{ address: '169.254.169.254', family: 4 }],
    'internal.attacker.test': [{ address: '10.0.0.7', family: 4 }],
    'v6-loopback.attacker.test': [{ address: '::1', family: 6 }],
    'mapped.attacker.test': [{ address: '::ffff:127.0.0.1', family: 6 }],
  };
  const resolver = async (name: string): Promise<ResolvedAddress[]> => {
    const hit = hostile[name];
    if (hit) return hit;
    const { systemResolver } = await import('@notify/providers');
    return [...(await systemResolver(name))];
  };

  it('refuses every hostile target permanently, before any byte reaches a server', async () => {
    const port = receiver.port;
    const targets = [
      `http://127.0.0.1:${port}/`,
      `http://2130706433:${port}/`, // decimal 127.0.0.1
      `http://0177.0.0.1:${port}/`, // octal
      `http://0x7f.0.0.1:${port}/`, // hex
      `http://127.1:${port}/`, // short form
      `http://017700000001:${port}/`, // octal, one number
      `http://[::1]:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`, // IPv4-mapped
      `http://[::ffff:7f00:1]:${port}/`, // IPv4-mapped, hex
      `http://[::127.0.0.1]:${port}/`, // IPv4-compatible
      `http://[64:ff9b::7f00:1]:${port}/`, // NAT64
      `http://[2002:7f00:1::]:${port}/`, // 6to4
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      `http://0.0.0.0:${port}/`,
      `http://0:${port}/`,
      'http://[::]/',
      'http://10.0.0.1/',
      'http://172.16.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://240.0.0.1/',
      `http://localhost:${port}/`, // resolves to 127.0.0.1
      `http://0x7f000001:${port}/`, // hex, one number
      'http://[::ffff:a9fe:a9fe]/', // metadata, IPv4-mapped
      'http://metadata.attacker.test/',
      'http://internal.attacker.test/',
      'http://v6-loopback.attacker.test/',
      'http://mapped.attacker.test/',
      `ftp://127.0.0.1:${port}/`,
      `http://user:pass@example.com/`,
    ];
    expect(targets.length).toBeGreaterThanOrEqual(20);
    const provider = webhook({ resolver });
    for (const to of targets) {
      const result = await provider.send(delivery(to), never());
      expect(result, to).toMatchObject({
        kind: 'permanent',
        providerStatus: 'ETARGETREFUSED',
        error: expect.stringMatching(/webhook target/),
      });
    }
    expect(receiver.requests).toHaveLength(0);
  });

  it('names the reason in the error, but not the addresses a name resolves to (the tenant reads the error)', async () => {
    const warned: unknown[] = [];
    const logger = { ...silentLogger, warn: (o: unknown) => void warned.push(o), child: () => logger };
    const provider = createWebhookProvider({ resolver }, { clock: systemClock, logger });
    cleanups.push(() => provider.close?.());
    const meta = await provider.send(delivery('http://metadata.attacker.test/'), never());
    expect(meta).toMatchObject({
      error: 'webhook target host "metadata.attacker.test" refused: every address it resolves to is refused (a cloud metadata address)',
    });
    // An internal name's private address would map the operator's network for any tenant.
    const internal = await provider.send(delivery('http://internal.attacker.test/'), never());
    expect(internal).toMatchObject({
      error: 'webhook target host "internal.attacker.test" refused: every address it resolves to is refused (a private address)',
    });
    expect(JSON.stringify([meta, internal])).not.toMatch(/169\.254|10\.0\.0\.7/);
    // The operator's log keeps them.
    expect(warned).toContainEqual(
      expect.objectContaining({ reason: 'webhook target host "internal.attacker.test" refused: 10.0.0.7 is a private address' }),
    );
    // A literal address is the caller's own text: named as before.
    const literal = await provider.send(delivery('http://10.0.0.7/'), never());
    expect(literal).toMatchObject({ error: 'webhook target refused: 10.0.0.7 is a private address' });
    const cgnat = await provider.send(delivery('http://100.64.0.1/'), never());
    expect(cgnat).toMatchObject({ error: expect.stringMatching(/carrier-grade NAT/) });
  });

  it('does not follow a redirect to a private address: permanent, and the private target sees nothing', async () => {
    const inside = await startHttpReceiver({ host: '127.0.0.2' });
    cleanups.push(() => inside.close());
    receiver.script({ status: 302, headers: { location: `${inside.url}/admin` } });
    const provider = webhook({ allowCidrs: ['127.0.0.1/32'] });
    const result = await provider.send(delivery(`${receiver.url}/start`), never());
    expect(result).toMatchObject({ kind: 'permanent', providerStatus: '302', error: expect.stringMatching(/redirect/) });
    expect(receiver.requests).toHaveLength(1);
    expect(inside.requests).toHaveLength(0);
  });

  it('accepts an allow-listed local receiver, by address and by a name that resolves to it', async () => {
    const provider = webhook({ allowCidrs: ['127.0.0.1/32'] });
    expect(await provider.send(delivery(`${receiver.url}/a`), never())).toMatchObject({ kind: 'sent' });
    expect(await provider.send(delivery(`http://localhost:${receiver.port}/b`), never())).toMatchObject({ kind: 'sent' });
    expect(receiver.requests.map((r) => r.url)).toEqual(['/a', '/b']);
    // The allow-list is exact: 127.0.0.2 is still refused.
    const other = await provider.send(delivery(`http://127.0.0.2:${receiver.port}/`), never());
    expect(other).toMatchObject({ kind: 'permanent', providerStatus: 'ETARGETREFUSED' });
  });

  it('connects to the address it checked: one resolution per connection, no second lookup to rebind', async () => {
    const inside = await startHttpReceiver({ host: '127.0.0.3' });
    cleanups.push(() => inside.close());
    let calls = 0;
    // First answer: the allowed 127.0.0.3. Any later answer would point at 127.0.0.1 (refused, where `receiver` listens).
    const rebinding = async (): Promise<ResolvedAddress[]> =>
      calls++ === 0 ? [{ address: '127.0.0.3', family: 4 }] : [{ address: '127.0.0.1', family: 4 }];
    const provider = webhook({ allowCidrs: ['127.0.0.3/32'], resolver: rebinding });
    expect(await provider.send(delivery(`http://rebind.attacker.test:${inside.port}/`), never())).toMatchObject({ kind: 'sent' });
    expect(calls).toBe(1);
    expect(inside.requests).toHaveLength(1);
    expect(inside.requests[0]!.headers.host).toBe(`rebind.attacker.test:${inside.port}`);
    expect(receiver.requests).toHaveLength(0);
  });
});
