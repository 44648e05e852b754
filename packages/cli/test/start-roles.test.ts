import { dispatcherTopicSuffixes } from '@notify/dispatcher';
import { fromKysely } from '@notify/outbox';
import type { Logger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { type RunningNotify, startNotify } from '../src/start.js';
import { notifySettingsWrite } from '../src/sql/notify-settings-write.js';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, type TestKafka } from '../../../test/support/kafka.js';
import { waitFor } from '../../../test/support/wait.js';

// `notify start` in this process, against real PostgreSQL and Kafka: what a process without the
// relay and the dispatcher needs from Kafka (nothing to start or to be ready), what it tells about
// notify_settings and the schema, and what fails before any role joins a consumer group.

const KEY = 'start-roles-key-0123456789';
let t: TestDatabase;
let kafka: TestKafka;

interface Line {
  readonly level: string;
  readonly bindings: Record<string, unknown>;
  readonly fields: object;
  readonly msg: string | undefined;
}

/** A logger that keeps every line (with its child bindings) for the assertions. */
function recordingLogger(lines: Line[] = [], bindings: Record<string, unknown> = {}): Logger & { lines: Line[] } {
  const at = (level: string) => (fields: object, msg?: string) => void lines.push({ level, bindings, fields, msg });
  return {
    lines,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    child: (more) => recordingLogger(lines, { ...bindings, ...more }),
  };
}

const env = (more: Record<string, string> = {}) =>
  loadConfig({
    DATABASE_URL: t.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    PORT: '0',
    NOTIFY_ADMIN_PORT: '0',
    NOTIFY_API_KEYS: `acme:${KEY}`,
    ...more,
  });

beforeAll(async () => {
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  await kafka.createTopics(dispatcherTopicSuffixes(env().retry), 1);
}, 60_000);

afterAll(async () => {
  await kafka?.close();
  await t?.close();
});

async function withStarted<T>(running: RunningNotify, fn: (n: RunningNotify) => Promise<T>): Promise<T> {
  try {
    return await fn(running);
  } finally {
    await running.stop();
  }
}

/** GET `url`: the response and its text. */
const get = async (url: string) => {
  const res = await fetch(url);
  return { res, text: await res.text() };
};

describe('a process without the relay and the dispatcher', () => {
  it('starts while Kafka is down, is ready on the database alone, and its lag readings fail fast', async () => {
    const logger = recordingLogger();
    const config = env({ KAFKA_BROKERS: '127.0.0.1:1' });
    await withStarted(await startNotify(config, ['api'], { logger, clock: new ManualClock(new Date()) }), async (n) => {
      const ready = await get(`${n.adminUrl}/readyz`);
      expect(ready.res.status).toBe(200);
      expect(JSON.parse(ready.text)).toEqual({ status: 'ok', checks: { database: 'ok', started: 'ok' } });
      const metrics = await get(`${n.adminUrl}/metrics`);
      expect(metrics.res.status).toBe(200);
      // It answered although Kafka never does: the lag read gave up (its 2-s bound is metrics.test.ts's, with fake timers).
      expect(metrics.text).not.toMatch(/^notify_kafka_consumer_lag_messages\{/m);
      expect(logger.lines.filter((l) => l.level === 'warn' && l.msg?.startsWith('consumer lag: Kafka does not answer'))).toHaveLength(1);
      // The API accepts notifications into the outbox meanwhile (the point of the outbox).
      const res = await fetch(`${n.url}/v1/notifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'webhook', to: 'https://example.com/hook', body: 'hi' }),
      });
      expect(res.status).toBe(202);
    });
  }, 60_000);

  it('reads the consumer lag from Kafka when it is up', async () => {
    const logger = recordingLogger();
    await withStarted(await startNotify(env(), ['api'], { logger, clock: new ManualClock(new Date()) }), async (n) => {
      expect(JSON.parse((await get(`${n.adminUrl}/readyz`)).text).checks).toEqual({ database: 'ok', started: 'ok' });
      const metrics = await get(`${n.adminUrl}/metrics`);
      expect(metrics.text).toContain(`notify_kafka_consumer_lag_messages{topic="${kafka.topic('requests')}"} 0`);
    });
  }, 60_000);

  it('with the relay, Kafka is still checked by /readyz', async () => {
    const logger = recordingLogger();
    await withStarted(await startNotify(env(), ['relay'], { logger, clock: new ManualClock(new Date()) }), async (n) => {
      expect(JSON.parse((await get(`${n.adminUrl}/readyz`)).text).checks).toEqual({ database: 'ok', kafka: 'ok', started: 'ok' });
    });
  }, 60_000);
});

describe('notify_settings', () => {
  it('warns naming each field this start changes, and the API follows the stored settings', async () => {
    await notifySettingsWrite(fromKysely(t.db), { maxAttempts: 7, defaultTtlMs: 60_000, events: 'none' });
    const logger = recordingLogger();
    const config = env({ NOTIFY_MAX_ATTEMPTS: '3', NOTIFY_DEFAULT_TTL_MS: '60000', NOTIFY_EVENTS: 'all', KAFKA_BROKERS: '127.0.0.1:1' });
    const running = await startNotify(config, ['api'], { logger, clock: new ManualClock(new Date()), settingsRefreshMs: 50 });
    await withStarted(running, async (n) => {
      const warned = logger.lines.filter((l) => l.level === 'warn' && l.msg?.includes('notify_settings'));
      expect(warned).toHaveLength(1);
      expect(warned[0]!.fields).toEqual({ changes: ['NOTIFY_MAX_ATTEMPTS 7 → 3', 'NOTIFY_EVENTS none → all'] });
      expect(warned[0]!.msg).toMatch(/every enqueuer of this database .* follows them/);
      // Another process's start writes its own: this API enqueues with them, not with its env's 3.
      await notifySettingsWrite(fromKysely(t.db), { maxAttempts: 9, defaultTtlMs: 60_000, events: 'all' });
      await waitFor(() => logger.lines.some((l) => l.msg?.startsWith('notify_settings changed by another notify start')), {
        timeoutMs: 5_000,
        message: 'the API to re-read notify_settings',
      });
      const res = await fetch(`${n.url}/v1/notifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'webhook', to: 'https://example.com/hook', body: 'settings' }),
      });
      expect(res.status).toBe(202);
      const { id } = (await res.json()) as { id: string };
      const row = await t.db.selectFrom('notifications').select('max_attempts').where('id', '=', id).executeTakeFirstOrThrow();
      expect(row.max_attempts).toBe(9);
    });
  }, 60_000);

  it('says nothing when this start changes nothing', async () => {
    await notifySettingsWrite(fromKysely(t.db), { maxAttempts: 8, defaultTtlMs: 86_400_000, events: 'all' });
    const logger = recordingLogger();
    await withStarted(
      await startNotify(env({ KAFKA_BROKERS: '127.0.0.1:1' }), ['api'], { logger, clock: new ManualClock(new Date()) }),
      async () => {
        expect(logger.lines.filter((l) => l.msg?.includes('notify_settings'))).toEqual([]);
      },
    );
  }, 60_000);
});

describe('start-up checks', () => {
  it('warns, and starts, when the schema is newer than this build (a rolling deploy migrated first)', async () => {
    await fromKysely(t.db).query("INSERT INTO kysely_migration (name, timestamp) VALUES ('9999_from_the_future', now()::text)", []);
    try {
      const logger = recordingLogger();
      await withStarted(
        await startNotify(env({ KAFKA_BROKERS: '127.0.0.1:1' }), ['api'], { logger, clock: new ManualClock(new Date()) }),
        async () => {
          const warned = logger.lines.filter(
            (l) => l.level === 'warn' && l.msg?.startsWith('the database schema is newer than this build'),
          );
          expect(warned.map((l) => l.fields)).toEqual([{ migrations: ['9999_from_the_future'] }]);
        },
      );
    } finally {
      await fromKysely(t.db).query("DELETE FROM kysely_migration WHERE name = '9999_from_the_future'", []);
    }
  }, 60_000);

  it('an admin address that cannot be bound fails the start, naming NOTIFY_ADMIN_HOST, before the relay or the dispatcher starts', async () => {
    for (const [host, code] of [
      ['not_a_host!!', /ENOTFOUND|EAI_AGAIN/],
      ['8.8.8.8', /EADDRNOTAVAIL/],
    ] as const) {
      const logger = recordingLogger();
      const failed = startNotify(env({ NOTIFY_ADMIN_HOST: host }), ['relay', 'dispatcher'], { logger, clock: new ManualClock(new Date()) });
      await expect(failed).rejects.toThrow(code);
      await expect(failed).rejects.toThrow(
        new RegExp(`NOTIFY_ADMIN_HOST=${host.replace(/[.!]/g, '\\$&')} .*; set NOTIFY_ADMIN_HOST to an address`),
      );
      expect(logger.lines.filter((l) => l.bindings.role === 'relay' || l.bindings.role === 'dispatcher')).toEqual([]);
    }
    const groups = await kafka.admin.describeGroups([`${kafka.prefix}.dispatcher`]);
    expect(groups.groups[0]?.members ?? []).toEqual([]);
  }, 60_000);

  it("warns when a delivery may outlast the dispatcher's share of the shutdown deadline", async () => {
    const logger = recordingLogger();
    const config = env({ NOTIFY_SEND_TIMEOUT_MS: '6000', NOTIFY_SHUTDOWN_TIMEOUT_MS: '10000', KAFKA_BROKERS: '127.0.0.1:1' });
    // The warning comes first, before the checks, so a dispatcher that cannot reach Kafka shows it too.
    await expect(startNotify(config, ['dispatcher'], { logger, clock: new ManualClock(new Date()) })).rejects.toThrow(/cannot reach Kafka/);
    const warned = logger.lines.filter((l) => l.level === 'warn' && l.msg?.startsWith('NOTIFY_SEND_TIMEOUT_MS'));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.msg).toMatch(
      /NOTIFY_SEND_TIMEOUT_MS \(6000\) is more than the dispatcher's share of NOTIFY_SHUTDOWN_TIMEOUT_MS \(half: 5000\)/,
    );
    expect(warned[0]!.msg).toMatch(/abandoned and sent again after the restart/);
    const quiet = recordingLogger();
    await expect(
      startNotify(
        env({ NOTIFY_SEND_TIMEOUT_MS: '5000', NOTIFY_SHUTDOWN_TIMEOUT_MS: '10000', KAFKA_BROKERS: '127.0.0.1:1' }),
        ['dispatcher'],
        {
          logger: quiet,
          clock: new ManualClock(new Date()),
        },
      ),
    ).rejects.toThrow(/cannot reach Kafka/);
    expect(quiet.lines.filter((l) => l.msg?.startsWith('NOTIFY_SEND_TIMEOUT_MS'))).toEqual([]);
  }, 60_000);
});
