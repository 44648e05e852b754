import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureTopics } from '@notify/cli';
import { topicName } from '@notify/contract';
import { dispatcherTopicSuffixes } from '@notify/dispatcher';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';
import { runNotifyCli, startNotifyProcess } from '../../../test/support/notify-process.js';

// Each test runs the compiled command as a child; on a loaded 2-core machine a child's start has taken over 20 s.
vi.setConfig({ testTimeout: 120_000 });

// Few delay tiers (1 s and 2 s), so the file creates a handful of topics, not 29.
const RETRY_ENV = { NOTIFY_BASE_DELAY_MS: '1000', NOTIFY_MAX_DELAY_MS: '2000', NOTIFY_JITTER: '0' };
const RETRY = { baseDelayMs: 1000, maxDelayMs: 2000, jitter: 0 };

let t: TestDatabase;
let kafka: TestKafka;
let env: Record<string, string>;

interface Report {
  ok: boolean;
  exitCode: number;
  settings: Record<string, unknown>;
  warnings: { message: string }[];
  checks: { name: string; status: string; detail: string }[];
}

const statuses = (r: Report) => Object.fromEntries(r.checks.map((c) => [c.name, c.status]));

beforeAll(async () => {
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  // The topics as `notify start` would create them with NOTIFY_TOPIC_PARTITIONS=2: delay topics 1 partition, the others 2.
  const topics = dispatcherTopicSuffixes(RETRY).map((s) => ({
    topic: topicName(kafka.prefix, s),
    partitions: s.startsWith('retry.') ? 1 : 2,
  }));
  await ensureTopics(
    kafka.admin,
    topics.map((x) => x.topic),
    (name) => topics.find((x) => x.topic === name)!.partitions,
  );
  // A password PostgreSQL's trust authentication ignores: it must not appear in the output.
  const url = new URL(t.url);
  url.password = 'pg-s3cret';
  env = {
    ...RETRY_ENV,
    DATABASE_URL: url.toString(),
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    NOTIFY_TOPIC_PARTITIONS: '2',
    NOTIFY_WEBHOOK_SECRET: 'wh-s3cret',
  };
});
afterAll(async () => {
  await kafka?.close();
  await t?.close();
});

describe('notify config-check', () => {
  it('ok: every check passes, secrets are redacted, and a settings change is a warning that writes nothing', async () => {
    const res = await runNotifyCli(['config-check', '--json'], { ...env, NOTIFY_MAX_ATTEMPTS: '5', NOTIFY_MAX_ATEMPTS: '3' });
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).not.toContain('s3cret');
    const report = JSON.parse(res.stdout) as Report;
    expect(report.ok).toBe(true);
    expect(statuses(report)).toEqual({ postgresql: 'ok', schema: 'ok', notify_settings: 'ok', kafka: 'ok', topics: 'ok' });
    expect(report.settings).toMatchObject({ 'retry.maxAttempts': 5, 'webhook.signingSecret': '[redacted]' });
    expect(report.settings.databaseUrl).toContain(':***@');
    const messages = report.warnings.map((w) => w.message);
    expect(messages).toContainEqual(expect.stringContaining('notify does not read NOTIFY_MAX_ATEMPTS (did you mean NOTIFY_MAX_ATTEMPTS?)'));
    expect(messages).toContainEqual(
      expect.stringMatching(/^a notify start with this configuration would change notify_settings \(NOTIFY_MAX_ATTEMPTS 8 → 5\)/),
    );
    // Checked, not written: the stored budget is still the default.
    const { rows } = await t.pool.query<{ max_attempts: number }>('SELECT max_attempts FROM notify_settings');
    expect(rows).toEqual([{ max_attempts: 8 }]);

    const text = await runNotifyCli(['config-check'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^ {2}ok +topics +\d+ of \d+ present with the expected partitions$/m);
    expect(text.stdout.trim().split('\n').at(-1)).toMatch(/^notify config-check: ok/);
  });

  it('a tenant with a plaintext webhook secret: a warning that names the seal command, exit 0; none once sealed', async () => {
    await t.pool.query(`INSERT INTO tenants (id, created_at, webhook_signing_secret) VALUES ('legacy-cc', now(), 'whsec_plain')`);
    try {
      const res = await runNotifyCli(['config-check', '--json', '--roles', 'api'], env);
      expect(res.code).toBe(0);
      expect(res.stdout).not.toContain('whsec_plain');
      const messages = (JSON.parse(res.stdout) as Report).warnings.map((w) => w.message);
      expect(messages).toContainEqual(
        expect.stringMatching(/^1 tenant keeps its webhook signing secret in plaintext .*`notify webhook-secrets seal`/),
      );
      const sealed = await runNotifyCli(['webhook-secrets', 'seal'], { ...env, NOTIFY_SECRETS_KEY: randomBytes(32).toString('base64') });
      expect(sealed.code).toBe(0);
      const after = await runNotifyCli(['config-check', '--json', '--roles', 'api'], env);
      expect((JSON.parse(after.stdout) as Report).warnings.map((w) => w.message)).not.toContainEqual(expect.stringContaining('plaintext'));
    } finally {
      await t.pool.query(`DELETE FROM tenant_webhook_secrets WHERE tenant_id = 'legacy-cc'`);
      await t.pool.query(`DELETE FROM tenants WHERE id = 'legacy-cc'`);
    }
  });

  it('topics with another partition count than the configuration: a warning naming them, exit 0, the same warning as notify start', async () => {
    const other = { ...env, NOTIFY_TOPIC_PARTITIONS: '3' };
    const requests = `${kafka.prefix}.requests`;
    const res = await runNotifyCli(['config-check', '--roles', 'relay', '--json'], other);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    const report = JSON.parse(res.stdout) as Report;
    expect(report.checks.find((c) => c.name === 'topics')).toMatchObject({
      status: 'ok',
      detail: expect.stringMatching(/^(\d+) of \1 present; \d+ with another partition count \(see the warnings\)$/),
    });
    const warned = report.warnings.filter((w) => w.message.includes('another partition count'));
    expect(warned).toEqual([expect.objectContaining({ message: expect.stringContaining(`${requests} has 2, configured 3`) })]);

    // notify start logs that warning, at warn, word for word, starts, and leaves the topic as it is.
    const notify = await startNotifyProcess(['--roles', 'relay'], { ...other, DATABASE_URL: t.url });
    try {
      const logged = notify
        .output()
        .split('\n')
        .filter((l) => l.includes('another partition count'))
        .map((l) => JSON.parse(l) as { level: string; msg: string });
      expect(logged).toEqual([expect.objectContaining({ level: 'warn', msg: warned[0]!.message })]);
    } finally {
      expect(await notify.stop()).toBe(0);
    }
    const [meta] = (await kafka.admin.fetchTopicMetadata({ topics: [requests] })).topics;
    expect(meta!.partitions).toHaveLength(2);
  });

  it('an invalid configuration: exit 2, the same line as notify start, nothing checked', async () => {
    const res = await runNotifyCli(['config-check'], { ...env, NOTIFY_MAX_ATTEMPTS: '0' });
    expect(res.code).toBe(2);
    expect(res.stderr.trim()).toBe('notify: invalid configuration: NOTIFY_MAX_ATTEMPTS: expected a number from 1 to 100, got 0');
    expect(res.stdout).toBe('');
  });

  it('unreachable PostgreSQL and Kafka: exit 1 with a line per failure; the api role does not check Kafka', async () => {
    const down = { ...env, DATABASE_URL: 'postgres://postgres:pg-s3cret@127.0.0.1:1/nowhere', KAFKA_BROKERS: '127.0.0.1:1' };
    const res = await runNotifyCli(['config-check', '--roles', 'api,dispatcher'], down);
    expect(res.code).toBe(1);
    expect(res.stderr.trim().split('\n')).toEqual([
      'notify: config-check: postgresql: cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1:1/nowhere (ECONNREFUSED); start it or set DATABASE_URL',
      expect.stringMatching(/^notify: config-check: kafka: cannot reach Kafka at 127\.0\.0\.1:1 \(.*\); start it .* or set KAFKA_BROKERS$/),
    ]);
    expect(res.stdout).not.toContain('s3cret');

    const apiOnly = await runNotifyCli(['config-check', '--roles', 'api', '--json'], { ...env, KAFKA_BROKERS: '127.0.0.1:1' });
    expect(apiOnly.code).toBe(0);
    expect(statuses(JSON.parse(apiOnly.stdout) as Report)).toMatchObject({ postgresql: 'ok', kafka: 'skipped', topics: 'skipped' });
  });
});
