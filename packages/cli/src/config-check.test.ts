import { describe, expect, it } from 'vitest';
import { type CheckResult, type ConfigCheckReport, configCheckExitCode, printableSettings, renderConfigCheck } from './config-check.js';
import { loadConfig } from './config.js';

const ok = (name: CheckResult['name']): CheckResult => ({ name, status: 'ok', detail: `${name} fine` });

function report(checks: readonly CheckResult[], warnings: ConfigCheckReport['warnings'] = []): ConfigCheckReport {
  return {
    roles: ['api', 'relay'],
    settings: { databaseUrl: 'postgres://u:***@h/db', topicPartitions: 6, kafkaBrokers: ['a:1', 'b:2'] },
    warnings,
    checks,
  };
}

describe('configCheckExitCode / renderConfigCheck', () => {
  it('exits 0 when every check passed or was skipped, warnings included, and writes nothing on stderr', () => {
    const r = report(
      [ok('postgresql'), { name: 'kafka', status: 'skipped', detail: 'not needed' }],
      [{ fields: { x: 1 }, message: 'careful' }],
    );
    expect(configCheckExitCode(r)).toBe(0);
    const text = renderConfigCheck(r, { json: false });
    expect(text.exitCode).toBe(0);
    expect(text.err).toEqual([]);
    expect(text.out).toContain('  - careful');
    expect(text.out.at(-1)).toBe('notify config-check: ok (1 warning)');
    expect(text.out).toContainEqual(expect.stringMatching(/^ {2}kafkaBrokers +a:1,b:2$/));
  });

  it('exits 1 when a check failed, with one stderr line per failure naming the check', () => {
    const r = report([
      { name: 'postgresql', status: 'failed', detail: 'cannot reach PostgreSQL' },
      { name: 'schema', status: 'skipped', detail: 'PostgreSQL not reached' },
      { name: 'kafka', status: 'failed', detail: 'cannot reach Kafka' },
    ]);
    const text = renderConfigCheck(r, { json: false });
    expect(text.exitCode).toBe(1);
    expect(text.err).toEqual([
      'notify: config-check: postgresql: cannot reach PostgreSQL',
      'notify: config-check: kafka: cannot reach Kafka',
    ]);
    expect(text.out.at(-1)).toBe('notify config-check: 2 checks failed (postgresql, kafka)');
  });

  it('--json prints one parsable document with the same verdict, and the same stderr lines', () => {
    const r = report(
      [ok('postgresql'), { name: 'topics', status: 'failed', detail: 'partition counts differ' }],
      [{ fields: { changes: ['A 1 → 2'] }, message: 'would change' }],
    );
    const json = renderConfigCheck(r, { json: true });
    expect(json.exitCode).toBe(1);
    expect(json.out).toHaveLength(1);
    expect(JSON.parse(json.out[0]!)).toEqual({
      ok: false,
      exitCode: 1,
      roles: ['api', 'relay'],
      settings: r.settings,
      warnings: [{ message: 'would change', changes: ['A 1 → 2'] }],
      checks: r.checks,
    });
    expect(json.err).toEqual(['notify: config-check: topics: partition counts differ']);
  });
});

describe('printableSettings', () => {
  it('redacts secrets and URL passwords, and keeps the other settings as loaded', () => {
    const settings = printableSettings(
      loadConfig({
        DATABASE_URL: 'postgres://notify:hunter2@db.internal:5432/notify?sslpassword=p4ss',
        NOTIFY_SMTP_URL: 'smtp://mailer:smtp-pw@mail.internal:587',
        NOTIFY_SMS_AUTH_TOKEN: 'sms-token',
        NOTIFY_WEBHOOK_SECRET: 'whsec',
        NOTIFY_SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
        NOTIFY_API_KEYS: 'acme:key-one',
        NOTIFY_MAX_ATTEMPTS: '5',
      }),
    );
    const text = JSON.stringify(settings);
    for (const secret of ['hunter2', 'p4ss', 'smtp-pw', 'sms-token', 'whsec', 'key-one', Buffer.alloc(32, 7).toString('base64')]) {
      expect(text).not.toContain(secret);
    }
    expect(settings).toMatchObject({
      databaseUrl: expect.stringMatching(/^postgres:\/\/notify:\*\*\*@db\.internal:5432\/notify\?sslpassword=\*\*\*$/),
      'smtp.url': 'smtp://mailer:***@mail.internal:587',
      'sms.authToken': '[redacted]',
      'webhook.signingSecret': '[redacted]',
      'webhook.secretsKey': '[redacted]',
      'seedApiKeys.0.tenantId': 'acme',
      'seedApiKeys.0.key': '[redacted]',
      'retry.maxAttempts': 5,
      'sms.accountId': null,
    });
  });
});
