import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, silentLogger, systemClock } from '@notify/runtime';
import { loadConfig } from '@notify/cli';
import { createProviders } from '@notify/providers';
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
