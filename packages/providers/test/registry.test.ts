import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, silentLogger, systemClock } from '@notify/runtime';
import { loadConfig } from '@notify/cli';
import { createFallbackProviders, createProviders, notificationEndpointTargets, providerOrigins } from '@notify/providers';
import { verifyWebhookSignature } from '@notify/providers/testing';
import { type HttpReceiver, type SmtpSink, contractDelivery, startHttpReceiver, startSmtpSink } from '@notify/providers/testing';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';

let tdb: TestDatabase;
let receiver: HttpReceiver;
let gateway: HttpReceiver;
let sink: SmtpSink;
beforeAll(async () => {
  [tdb, receiver, gateway, sink] = await Promise.all([
    createTestDatabase(),
    startHttpReceiver(),
    startHttpReceiver({ defaultResponse: { status: 201, body: '{}' } }),
    startSmtpSink(),
  ]);
});
afterAll(async () => {
  await Promise.all([tdb.close(), receiver.close(), gateway.close(), sink.close()]);
});

const deps = () => ({ db: tdb.db, clock: systemClock, logger: silentLogger });

describe('createProviders', () => {
  it('builds every configured channel from the environment, and each delivers to its real server', async () => {
    await tdb.pool.query(`INSERT INTO tenants (id, webhook_signing_secret) VALUES ('acme', 'acme-secret')`);
    const config = loadConfig({
      NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
      NOTIFY_WEBHOOK_SECRET: 'global-secret',
      NOTIFY_SMTP_URL: sink.url,
      NOTIFY_SMTP_FROM: 'notify@example.com',
      NOTIFY_SMS_URL: gateway.url,
      NOTIFY_SMS_ACCOUNT_ID: 'AC1',
      NOTIFY_SMS_AUTH_TOKEN: 't',
      NOTIFY_RATE_LIMIT_EMAIL: '100/s',
    });
    const providers = createProviders(config, deps());
    try {
      expect(Object.keys(providers).sort()).toEqual(['email', 'sms', 'webhook']);
      const signal = new AbortController().signal;
      const hook = contractDelivery({ channel: 'webhook', to: receiver.url }, { tenantId: 'acme' });
      expect(await providers.webhook!.send(hook, signal)).toMatchObject({ kind: 'sent' });
      const req = receiver.requests.at(-1)!;
      expect(verifyWebhookSignature({ secret: 'acme-secret', headers: req.headers, body: req.body, now: new Date() }).ok).toBe(true);
      expect(await providers.email!.send(contractDelivery({ channel: 'email', to: 'ada@example.com' }), signal)).toMatchObject({
        kind: 'sent',
      });
      expect(typeof providers.email!.admit).toBe('function'); // rate-limited
      expect(providers.sms!.admit).toBeUndefined(); // not limited
      expect(await providers.sms!.send(contractDelivery({ channel: 'sms', to: '+14155550100' }), signal)).toMatchObject({ kind: 'sent' });
      expect(sink.messages).toHaveLength(1);
      expect(gateway.requests[0]!.url).toBe('/Accounts/AC1/Messages.json');
    } finally {
      for (const p of Object.values(providers)) await p.close?.();
    }
  });

  it('leaves out channels without configuration (webhook needs none)', async () => {
    const providers = createProviders(loadConfig({}), deps());
    expect(Object.keys(providers)).toEqual(['webhook']);
    await providers.webhook!.close?.();
  });

  it('rejects a malformed allow-list or secret with a ConfigError naming the variable', () => {
    expect(() => createProviders(loadConfig({ NOTIFY_WEBHOOK_ALLOW_CIDRS: '10.0.0.0/99' }), deps())).toThrow(ConfigError);
    expect(() => createProviders(loadConfig({ NOTIFY_WEBHOOK_ALLOW_CIDRS: 'intranet' }), deps())).toThrow(/NOTIFY_WEBHOOK_ALLOW_CIDRS/);
    expect(() => createProviders(loadConfig({ NOTIFY_WEBHOOK_SECRET: 'whsec_***' }), deps())).toThrow(
      /NOTIFY_WEBHOOK_SECRET: .*not base64/,
    );
  });
});

describe('createFallbackProviders', () => {
  it('builds a second SMTP server and SMS gateway, each delivering to its own real server; SMS credentials in the URL are its own', async () => {
    const [fallbackSink, fallbackGateway] = await Promise.all([
      startSmtpSink(),
      startHttpReceiver({ defaultResponse: { status: 201, body: '{}' } }),
    ]);
    const own = new URL(fallbackGateway.url);
    own.username = 'AC2';
    own.password = 'tok%2F2';
    const config = loadConfig({
      NOTIFY_SMTP_URL: sink.url,
      NOTIFY_SMTP_FALLBACK_URL: fallbackSink.url,
      NOTIFY_SMTP_FROM: 'notify@example.com',
      NOTIFY_SMS_URL: gateway.url,
      NOTIFY_SMS_FALLBACK_URL: own.toString(),
      NOTIFY_SMS_ACCOUNT_ID: 'AC1',
      NOTIFY_SMS_AUTH_TOKEN: 't',
      NOTIFY_RATE_LIMIT_SMS: '100/s',
    });
    const fallbacks = createFallbackProviders(config, deps());
    try {
      expect(Object.keys(fallbacks).sort()).toEqual(['email', 'sms']);
      const signal = new AbortController().signal;
      const before = { sink: sink.messages.length, gateway: gateway.requests.length };
      expect(await fallbacks.email!.send(contractDelivery({ channel: 'email', to: 'ada@example.com' }), signal)).toMatchObject({
        kind: 'sent',
      });
      expect(await fallbacks.sms!.send(contractDelivery({ channel: 'sms', to: '+14155550100' }), signal)).toMatchObject({ kind: 'sent' });
      expect(typeof fallbacks.sms!.admit).toBe('function'); // the channel's rate limit applies to the fallback too
      expect(fallbacks.email!.admit).toBeUndefined();
      // Each went to the fallback server, none to the primary.
      expect(fallbackSink.messages).toHaveLength(1);
      expect(sink.messages).toHaveLength(before.sink);
      expect(gateway.requests).toHaveLength(before.gateway);
      const req = fallbackGateway.requests[0]!;
      expect(req.url).toBe('/Accounts/AC2/Messages.json');
      expect(Buffer.from(String(req.headers.authorization).replace(/^Basic /, ''), 'base64').toString()).toBe('AC2:tok/2');
    } finally {
      for (const p of Object.values(fallbacks)) await p.close?.();
      await Promise.all([fallbackSink.close(), fallbackGateway.close()]);
    }
  });

  it("uses the primary's SMS credentials when the fallback URL has none, and builds nothing for a channel without a primary", async () => {
    const fallbackGateway = await startHttpReceiver({ defaultResponse: { status: 201, body: '{}' } });
    const config = loadConfig({
      NOTIFY_SMS_URL: gateway.url,
      NOTIFY_SMS_FALLBACK_URL: fallbackGateway.url,
      NOTIFY_SMS_ACCOUNT_ID: 'AC1',
      NOTIFY_SMS_AUTH_TOKEN: 't',
      NOTIFY_SMTP_FALLBACK_URL: sink.url, // no NOTIFY_SMTP_URL: no email channel, so no fallback either
    });
    const fallbacks = createFallbackProviders(config, deps());
    try {
      expect(Object.keys(fallbacks)).toEqual(['sms']);
      expect(
        await fallbacks.sms!.send(contractDelivery({ channel: 'sms', to: '+14155550100' }), new AbortController().signal),
      ).toMatchObject({
        kind: 'sent',
      });
      expect(fallbackGateway.requests[0]!.url).toBe('/Accounts/AC1/Messages.json');
      expect(createFallbackProviders(loadConfig({}), deps())).toEqual({});
    } finally {
      await fallbacks.sms?.close?.();
      await fallbackGateway.close();
    }
  });
});

describe('providerOrigins', () => {
  it('names the origins the built providers deliver to (no credentials), so notificationEndpointTargets finds the endpoints the dispatcher keeps', async () => {
    const config = loadConfig({
      NOTIFY_SMTP_URL: 'smtp://mailer:smtp-pw@mx.example:587',
      NOTIFY_SMTP_FALLBACK_URL: 'smtps://mx2.example',
      NOTIFY_SMS_URL: 'https://api.gateway.example/2010-04-01',
      NOTIFY_SMS_ACCOUNT_ID: 'AC1',
      NOTIFY_SMS_AUTH_TOKEN: 't',
    });
    const [providers, fallbacks] = [createProviders(config, deps()), createFallbackProviders(config, deps())];
    try {
      const origins = providerOrigins(config);
      expect(origins).toEqual({
        email: { primary: providers.email!.origin, fallback: fallbacks.email!.origin },
        sms: { primary: providers.sms!.origin },
      });
      expect(origins.email).toEqual({ primary: 'smtp://mx.example:587', fallback: 'smtps://mx2.example:465' });
      // The dispatcher's order: the provider, then its fallback; a webhook's own URL origin.
      const of = (channel: 'email' | 'sms' | 'webhook', recipient: string) =>
        notificationEndpointTargets({ tenantId: 'acme', channel, recipient }, origins).map((e) => `${e.provider} ${e.origin}`);
      expect(of('email', 'ada@example.com')).toEqual(['primary smtp://mx.example:587', 'fallback smtps://mx2.example:465']);
      expect(of('sms', '+14155550100')).toEqual(['primary https://api.gateway.example:443']);
      expect(of('webhook', 'https://user:pw@hooks.example/path?q=1')).toEqual(['primary https://hooks.example:443']);
      expect(of('webhook', '[erased]')).toEqual([]);
      expect(notificationEndpointTargets({ tenantId: 'acme', channel: 'email', recipient: 'ada@example.com' }, {})).toEqual([]);
      expect(providerOrigins(loadConfig({ NOTIFY_SMTP_FALLBACK_URL: 'smtp://mx2.example' }))).toEqual({});
    } finally {
      await Promise.all([...Object.values(providers), ...Object.values(fallbacks)].map(async (p) => p?.close?.()));
    }
  });
});
