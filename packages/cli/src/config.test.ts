import { describe, expect, it } from 'vitest';
import { loadConfig, unknownVariables } from './config.js';
import { ConfigError } from '@notify/runtime';

describe('loadConfig', () => {
  it('has the documented defaults', () => {
    const c = loadConfig({});
    expect(c.retry).toEqual({ maxAttempts: 8, baseDelayMs: 1000, maxDelayMs: 3_600_000, jitter: 0.2, defaultTtlMs: 86_400_000 });
    expect(c.dispatcher.sendTimeoutMs).toBe(2000);
    expect(c.kafkaBrokers).toEqual(['127.0.0.1:19092']);
    expect(c.topicPrefix).toBe('notify');
    // Health, readiness and metrics on a port of their own, reachable from this machine only.
    expect({ port: c.port, adminPort: c.adminPort, adminHost: c.adminHost }).toEqual({
      port: 3000,
      adminPort: 9464,
      adminHost: '127.0.0.1',
    });
    expect(c.apiMaxConnections).toBe(1024);
  });
  it.each([
    ['NOTIFY_MAX_ATTEMPTS', 'many', /NOTIFY_MAX_ATTEMPTS: expected a whole number/],
    ['NOTIFY_MAX_ATTEMPTS', '0', /NOTIFY_MAX_ATTEMPTS: expected a number from 1/],
    ['NOTIFY_JITTER', '1.5', /NOTIFY_JITTER: expected a fraction/],
    ['DATABASE_URL', 'mysql://x', /DATABASE_URL: expected a postgres: or postgresql: URL/],
    ['KAFKA_BROKERS', 'localhost', /KAFKA_BROKERS: expected host:port/],
    ['NOTIFY_API_KEYS', 'nokey', /NOTIFY_API_KEYS/],
    ['LOG_LEVEL', 'loud', /LOG_LEVEL/],
    ['NOTIFY_KAFKA_SESSION_TIMEOUT_MS', '1000', /NOTIFY_KAFKA_SESSION_TIMEOUT_MS: expected a number from 6000/],
    ['NOTIFY_SHUTDOWN_TIMEOUT_MS', '50', /NOTIFY_SHUTDOWN_TIMEOUT_MS: expected a number from 100/],
    ['NOTIFY_API_MAX_IN_FLIGHT', '0', /NOTIFY_API_MAX_IN_FLIGHT: expected a number from 1/],
    ['NOTIFY_API_MAX_CONNECTIONS', '-1', /NOTIFY_API_MAX_CONNECTIONS: expected a number from 0 to 1000000, got -1/],
    ['NOTIFY_API_MAX_CONNECTIONS', '1k', /NOTIFY_API_MAX_CONNECTIONS: expected a whole number, got "1k"/],
    ['NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION', '101', /NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: expected a number from 0/],
    ['NOTIFY_DB_POOL_WAIT_MS', '-1', /NOTIFY_DB_POOL_WAIT_MS: expected a number from 0/],
    ['NOTIFY_MAX_UNFINISHED', '31', /NOTIFY_MAX_UNFINISHED: must be at least NOTIFY_MAX_IN_FLIGHT \(32\)/],
    ['NOTIFY_MIGRATE_LOCK_TIMEOUT_MS', '0', /NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: expected a number from 1 to 600000, got 0/],
    ['NOTIFY_MIGRATE_LOCK_TIMEOUT_MS', '5s', /NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: expected a whole number, got "5s"/],
    ['NOTIFY_MIGRATE_LOCK_ATTEMPTS', '0', /NOTIFY_MIGRATE_LOCK_ATTEMPTS: expected a number from 1 to 100, got 0/],
    [
      'NOTIFY_WEBHOOK_SECRET',
      'whsec_not base64!',
      /NOTIFY_WEBHOOK_SECRET: the webhook signing secret starts with whsec_ but the rest is not base64/,
    ],
  ])('%s=%s is rejected with a message naming it', (name, value, message) => {
    expect(() => loadConfig({ [name]: value })).toThrow(message);
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
  });
  it('bounds each migration lock wait at 5 s, 5 tries, by default; both settable', () => {
    expect(loadConfig({}).migrate).toEqual({ lockTimeoutMs: 5_000, lockAttempts: 5 });
    expect(loadConfig({ NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: '250', NOTIFY_MIGRATE_LOCK_ATTEMPTS: '1' }).migrate).toEqual({
      lockTimeoutMs: 250,
      lockAttempts: 1,
    });
  });
  it('reads the dispatcher group-commit settings, with defaults, and rejects out-of-range ones by name', () => {
    expect(loadConfig({}).dispatcher).toMatchObject({ outcomeBatchSize: 64, outcomeBatchDelayMs: 5 });
    expect(loadConfig({ NOTIFY_OUTCOME_BATCH_SIZE: '1', NOTIFY_OUTCOME_BATCH_DELAY_MS: '0' }).dispatcher).toMatchObject({
      outcomeBatchSize: 1,
      outcomeBatchDelayMs: 0,
    });
    expect(() => loadConfig({ NOTIFY_OUTCOME_BATCH_SIZE: '0' })).toThrow(/NOTIFY_OUTCOME_BATCH_SIZE: expected a number from 1/);
    expect(() => loadConfig({ NOTIFY_OUTCOME_BATCH_DELAY_MS: 'soon' })).toThrow(/NOTIFY_OUTCOME_BATCH_DELAY_MS: expected a whole number/);
  });
  it('reads the API group-commit settings, with defaults, and rejects out-of-range ones by name', () => {
    expect(loadConfig({}).apiGroupCommit).toEqual({ maxGroupSize: 100, maxInFlight: 1 });
    expect(loadConfig({ NOTIFY_API_GROUP_COMMIT: '1', NOTIFY_API_GROUP_COMMIT_IN_FLIGHT: '4' }).apiGroupCommit).toEqual({
      maxGroupSize: 1,
      maxInFlight: 4,
    });
    expect(() => loadConfig({ NOTIFY_API_GROUP_COMMIT: '0' })).toThrow(/NOTIFY_API_GROUP_COMMIT: expected a number from 1/);
    expect(() => loadConfig({ NOTIFY_API_GROUP_COMMIT: '1001' })).toThrow(/NOTIFY_API_GROUP_COMMIT: expected a number from 1/);
    expect(() => loadConfig({ NOTIFY_API_GROUP_COMMIT_IN_FLIGHT: '0' })).toThrow(
      /NOTIFY_API_GROUP_COMMIT_IN_FLIGHT: expected a number from 1/,
    );
  });
  it('creates topics with 6 partitions and delay topics with 1 by default, each settable, and rejects 0 by name', () => {
    expect(loadConfig({})).toMatchObject({ topicPartitions: 6, retryTopicPartitions: 1 });
    expect(loadConfig({ NOTIFY_TOPIC_PARTITIONS: '12', NOTIFY_RETRY_TOPIC_PARTITIONS: '6' })).toMatchObject({
      topicPartitions: 12,
      retryTopicPartitions: 6,
    });
    expect(() => loadConfig({ NOTIFY_RETRY_TOPIC_PARTITIONS: '0' })).toThrow(/NOTIFY_RETRY_TOPIC_PARTITIONS: expected a number from 1/);
  });
  it('defaults the shutdown deadline to 15 s', () => {
    expect(loadConfig({}).shutdownTimeoutMs).toBe(15_000);
    expect(loadConfig({ NOTIFY_SHUTDOWN_TIMEOUT_MS: '2000' }).shutdownTimeoutMs).toBe(2000);
  });
  it('rejects a max delay below the base delay', () => {
    expect(() => loadConfig({ NOTIFY_BASE_DELAY_MS: '5000', NOTIFY_MAX_DELAY_MS: '1000' })).toThrow(/NOTIFY_MAX_DELAY_MS/);
  });
  it('parses provider rate limits (NOTIFY_RATE_LIMIT_<CHANNEL>) and rejects malformed ones by name', () => {
    const c = loadConfig({ NOTIFY_RATE_LIMIT_EMAIL: '50/s', NOTIFY_RATE_LIMIT_SMS: '600/m,burst=20' });
    expect(c.rateLimits).toEqual({ email: { perSecond: 50, burst: 50 }, sms: { perSecond: 10, burst: 20 }, webhook: undefined });
    expect(loadConfig({ NOTIFY_RATE_LIMIT_WEBHOOK: '1/h' }).rateLimits.webhook).toEqual({ perSecond: 1 / 3600, burst: 1 });
    expect(loadConfig({}).smtp.poolSize).toBe(5);
    expect(() => loadConfig({ NOTIFY_RATE_LIMIT_EMAIL: 'fast' })).toThrow(/NOTIFY_RATE_LIMIT_EMAIL: expected <count>\/<s\|m\|h>/);
    expect(() => loadConfig({ NOTIFY_RATE_LIMIT_SMS: '0/s' })).toThrow(/NOTIFY_RATE_LIMIT_SMS: the rate must be above 0/);
    expect(() => loadConfig({ NOTIFY_SMTP_POOL_SIZE: '0' })).toThrow(/NOTIFY_SMTP_POOL_SIZE/);
  });
  it("reads the HTTP adapters' connections per origin (NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN)", () => {
    expect(loadConfig({}).http).toEqual({ connectionsPerOrigin: 64 });
    expect(loadConfig({ NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN: '8' }).http).toEqual({ connectionsPerOrigin: 8 });
    expect(() => loadConfig({ NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN: '0' })).toThrow(/NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN/);
  });
  it('parses seeded API keys', () => {
    expect(loadConfig({ NOTIFY_API_KEYS: 'acme:k1, globex:k:2' }).seedApiKeys).toEqual([
      { tenantId: 'acme', key: 'k1' },
      { tenantId: 'globex', key: 'k:2' },
    ]);
  });
});

describe('NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION', () => {
  it('is refused without the event-loop sampler (NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS=0), read as a percent otherwise', () => {
    expect(() => loadConfig({ NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: '90', NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS: '0' })).toThrow(
      /NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: needs NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS > 0/,
    );
    expect(loadConfig({ NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION: '90' }).apiMaxEventLoopUtilizationPct).toBe(90);
    expect(loadConfig({}).apiMaxEventLoopUtilizationPct).toBe(0);
    expect(loadConfig({}).dbPoolWaitMs).toBe(5_000);
  });
});

describe('numbers are plain decimals', () => {
  it.each([
    ['NOTIFY_JITTER', '0x1'],
    ['NOTIFY_JITTER', '1e-1'],
    ['NOTIFY_JITTER', '0b1'],
    ['NOTIFY_JITTER', '.5'],
    ['NOTIFY_JITTER', '-0'],
    ['NOTIFY_ENDPOINT_FAILURE_RATIO', '5E-1'],
    ['NOTIFY_MAX_ATTEMPTS', '0x10'],
    ['NOTIFY_MAX_ATTEMPTS', '1e1'],
    ['NOTIFY_SEND_TIMEOUT_MS', '2_000'],
    ['NOTIFY_SEND_TIMEOUT_MS', '2000.0'],
    ['NOTIFY_ENDPOINT_COOLDOWN', '1e4'],
  ])('%s=%s is refused with one line naming it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`^${name}: expected .*"?${value.replace('.', '\\.')}"?$`));
  });
  it('takes decimal fractions', () => {
    expect(loadConfig({ NOTIFY_JITTER: '0.25' }).retry.jitter).toBe(0.25);
    expect(loadConfig({ NOTIFY_JITTER: '1' }).retry.jitter).toBe(1);
    expect(loadConfig({ NOTIFY_ENDPOINT_FAILURE_RATIO: '0' }).endpoints.failureRatio).toBe(0);
  });
});

describe('settings checked before anything starts', () => {
  it('refuses PORT equal to NOTIFY_ADMIN_PORT, naming both; both 0 (pick free ports) is fine', () => {
    expect(() => loadConfig({ PORT: '9000', NOTIFY_ADMIN_PORT: '9000' })).toThrow(
      'NOTIFY_ADMIN_PORT: must differ from PORT (both are 9000): the admin endpoints need a port of their own',
    );
    expect(() => loadConfig({ PORT: '9464' })).toThrow(/NOTIFY_ADMIN_PORT: must differ from PORT/);
    expect(loadConfig({ PORT: '0', NOTIFY_ADMIN_PORT: '0' })).toMatchObject({ port: 0, adminPort: 0 });
  });
  it('refuses a malformed NOTIFY_WEBHOOK_ALLOW_CIDRS entry by name', () => {
    expect(() => loadConfig({ NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32, banana/99' })).toThrow(
      'NOTIFY_WEBHOOK_ALLOW_CIDRS: "banana/99" is not a CIDR (e.g. 127.0.0.1/32 or fd00::/8)',
    );
    expect(() => loadConfig({ NOTIFY_WEBHOOK_ALLOW_CIDRS: '10.0.0.0/33' })).toThrow(ConfigError);
    expect(loadConfig({ NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32,fd00::/8,10.1.2.3' }).webhook.allowCidrs).toEqual([
      '127.0.0.1/32',
      'fd00::/8',
      '10.1.2.3',
    ]);
  });
  it('takes NOTIFY_SMTP_FROM as an address, bare or with a name, and refuses one without a domain (the Message-ID needs it)', () => {
    expect(loadConfig({}).smtp.from).toBe('notify@localhost');
    expect(loadConfig({ NOTIFY_SMTP_FROM: 'no-reply@acme.example' }).smtp.from).toBe('no-reply@acme.example');
    expect(loadConfig({ NOTIFY_SMTP_FROM: 'Acme Support <no-reply@acme.example>' }).smtp.from).toBe('Acme Support <no-reply@acme.example>');
    for (const value of ['notanemail', 'Acme <no-reply>', 'a@b@c', 'Acme no-reply@acme.example', '<a@b'])
      expect(() => loadConfig({ NOTIFY_SMTP_FROM: value }), value).toThrow(/^NOTIFY_SMTP_FROM: expected an address/);
  });
  it('takes NOTIFY_CORS_ORIGINS as origins a browser sends, or *, and refuses anything else by name', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ NOTIFY_CORS_ORIGINS: 'https://admin.example.com, http://localhost:5173' }).corsOrigins).toEqual([
      'https://admin.example.com',
      'http://localhost:5173',
    ]);
    expect(loadConfig({ NOTIFY_CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    for (const [value, message] of [
      ['https://admin.example.com/', /"https:\/\/admin.example.com\/" is not an origin.*\(here: https:\/\/admin.example.com\)/],
      ['https://admin.example.com:443', /\(here: https:\/\/admin.example.com\)/],
      ['HTTPS://Admin.example.com', /is not an origin/],
      ['admin.example.com', /is not an origin/],
      ['ftp://files.example.com', /is not an origin/],
      ['*,https://admin.example.com', /\* already allows every origin/],
    ] as const) {
      expect(() => loadConfig({ NOTIFY_CORS_ORIGINS: value }), value).toThrow(message);
      expect(() => loadConfig({ NOTIFY_CORS_ORIGINS: value }), value).toThrow(/^NOTIFY_CORS_ORIGINS: /);
    }
  });
});

describe('unknownVariables', () => {
  it('names NOTIFY_* variables notify does not read, with the closest known name when one is close', () => {
    expect(
      unknownVariables({
        NOTIFY_MAX_ATEMPTS: '3',
        NOTIFY_MAX_ATTEMPTS: '3',
        NOTIFY_SEND_TIMEOUT: '100',
        NOTIFY_COLOUR: 'blue',
        PATH: '/bin',
        NOTIFY_RELAY_TRACE: '/tmp/t',
      }),
    ).toEqual([
      { name: 'NOTIFY_COLOUR', closest: undefined },
      { name: 'NOTIFY_MAX_ATEMPTS', closest: 'NOTIFY_MAX_ATTEMPTS' },
      { name: 'NOTIFY_SEND_TIMEOUT', closest: undefined },
    ]);
  });
  it('knows every variable loadConfig reads', () => {
    const env = Object.fromEntries(
      ['NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION', 'NOTIFY_SECRETS_KEY', 'NOTIFY_ENDPOINT_DISABLE_AFTER', 'NOTIFY_RETENTION_DAYS'].map((n) => [
        n,
        'x',
      ]),
    );
    expect(unknownVariables(env)).toEqual([]);
  });
});
