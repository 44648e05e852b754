/**
 * End to end: a notification queued through psql (`notify_enqueue`, as a Java or Python service
 * would in its own transaction) is delivered by the real relay and dispatcher, over real Kafka, to
 * a real local HTTP receiver, exactly like one queued through the HTTP API: same request to the
 * receiver, same status events, same end state. Wired like test/e2e/delivery.test.ts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '@notify/api';
import { dispatcherConfigFrom, loadConfig, relayConfigFrom } from '@notify/cli';
import { TOPICS, parseStatusEvent } from '@notify/contract';
import { createContentPreparer, createDispatcher, dispatcherTopicSuffixes, type Dispatcher } from '@notify/dispatcher';
import { fromKysely } from '@notify/outbox';
import { createProviders } from '@notify/providers';
import { createRelay, type Relay } from '@notify/relay';
import { silentLogger, systemClock } from '@notify/runtime';
import { issueTestKey } from '../support/chaos/tenants.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { waitFor } from '../support/wait.js';
import { psql } from './psql.js';

interface Received {
  readonly body: unknown;
  readonly headers: http.IncomingHttpHeaders;
}

let tdb: TestDatabase;
let tk: TestKafka;
let relay: Relay | undefined;
let dispatcher: Dispatcher | undefined;
let server: http.Server;
let receiverUrl: string;
const received: Received[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ body: JSON.parse(Buffer.concat(chunks).toString('utf8')), headers: req.headers });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  receiverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/sql`;
  tdb = await createTestDatabase();
  tk = await createTestKafka();
});

afterAll(async () => {
  await dispatcher?.stop({ timeoutMs: 2000 });
  await relay?.stop();
  await tk?.close();
  await tdb?.close();
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

/** `value` with the notification's id and every ISO instant replaced, so two deliveries compare equal. */
function normalised(value: unknown, id: string): unknown {
  return JSON.parse(
    JSON.stringify(value)
      .replaceAll(id, '<id>')
      .replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/g, '<instant>'),
  );
}

describe('a notification queued through psql', () => {
  it('is delivered by the relay and the dispatcher exactly like one queued through the API', async () => {
    const config = loadConfig({
      DATABASE_URL: tdb.url,
      KAFKA_BROKERS: tk.brokers.join(','),
      NOTIFY_TOPIC_PREFIX: tk.prefix,
      NOTIFY_MAX_ATTEMPTS: '4',
      NOTIFY_DEFAULT_TTL_MS: '3600000',
      NOTIFY_RELAY_POLL_MS: '50',
      NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
      NOTIFY_TOPIC_PARTITIONS: '3',
    });
    // What `notify start` does with its configuration, so SQL enqueuers follow the service's settings.
    await tdb.pool.query('UPDATE notify_settings SET max_attempts = $1, default_ttl_ms = $2, updated_at = now()', [
      config.retry.maxAttempts,
      config.retry.defaultTtlMs,
    ]);
    await tk.createTopics(dispatcherTopicSuffixes(config.retry), config.topicPartitions);
    const kafka = new Kafka({ clientId: 'notify-sql-e2e', brokers: [...config.kafkaBrokers], logLevel: logLevel.NOTHING });
    const deps = { db: tdb.db, clock: systemClock, logger: silentLogger };
    relay = createRelay(relayConfigFrom(config), {
      db: tdb.db,
      connectionString: config.databaseUrl,
      kafka,
      clock: systemClock,
      logger: silentLogger,
    });
    dispatcher = createDispatcher(dispatcherConfigFrom(config), {
      ...deps,
      kafka,
      providers: createProviders(config, deps),
      content: createContentPreparer({ db: tdb.db, clock: systemClock }),
    });
    await relay.start();
    await dispatcher.start();

    const key = await issueTestKey(fromKysely(tdb.db), 'acme');
    const request = { channel: 'webhook', to: receiverUrl, body: 'order shipped', data: { order: 42 }, metadata: { source: 'e2e' } };
    const app = createApp({ db: tdb.db, config: { retry: config.retry } });
    const res = await app.request('/v1/notifications', {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json', 'idempotency-key': 'api-1' },
      body: JSON.stringify(request),
    });
    expect(res.status).toBe(202);
    const apiId = ((await res.json()) as { id: string }).id;

    const r = await psql(tdb.url, "BEGIN;\nSELECT notify_enqueue(:'intent');\nCOMMIT;\n", {
      intent: JSON.stringify({ ...request, tenant_id: 'acme', idempotency_key: 'sql-1' }),
    });
    expect(r.exitCode, r.stderr).toBe(0);
    const sqlId = r.stdout.trim();

    const rows = async () => (await tdb.pool.query('SELECT * FROM notifications WHERE id = ANY($1) ORDER BY id', [[apiId, sqlId]])).rows;
    await waitFor(async () => (await rows()).every((n: { state: string }) => n.state === 'sent'), {
      timeoutMs: 30_000,
      message: 'both sent',
    });

    const [api, sql] = [apiId, sqlId].map((id) => received.find((x) => (x.headers['webhook-id'] as string | undefined) === id));
    expect(api, 'the API one reached the receiver').toBeDefined();
    expect(sql, 'the psql one reached the receiver').toBeDefined();
    expect(normalised(sql!.body, sqlId)).toEqual(normalised(api!.body, apiId));
    const headers = (h: http.IncomingHttpHeaders) =>
      Object.keys(h)
        .filter((k) => k !== 'content-length')
        .sort();
    expect(headers(sql!.headers)).toEqual(headers(api!.headers));

    const byId = new Map((await rows()).map((n: { id: string }) => [n.id, n]));
    const ignore = ['id', 'idempotency_key', 'request_hash', 'traceparent', 'created_at', 'updated_at', 'expires_at', 'sent_at'];
    const comparable = (n: Record<string, unknown>) => Object.fromEntries(Object.entries(n).filter(([k]) => !ignore.includes(k)));
    expect(comparable(byId.get(sqlId)!)).toEqual(comparable(byId.get(apiId)!));
    expect(byId.get(sqlId)).toMatchObject({ state: 'sent', attempts: 1, max_attempts: 4 });

    const events = await tk.readAll(TOPICS.events, 4, 20_000);
    const types = (id: string) =>
      events.map((m) => parseStatusEvent(m.value)).flatMap((p) => (p.ok && p.message.id === id ? [p.message.type] : []));
    expect(types(sqlId)).toEqual(['notification.queued', 'notification.sent']);
    expect(types(sqlId)).toEqual(types(apiId));
  });
});
