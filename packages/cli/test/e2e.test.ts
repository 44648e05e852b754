import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStatusEvent } from '@notify/contract';
import { AttemptList, NotificationView } from '@notify/api';
import { type HttpReceiver, startHttpReceiver } from '@notify/providers/testing';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { createTestKafka, stopNotifyAndCloseKafka, type TestKafka } from '../../../test/support/kafka.js';
import { fetchPastShedding } from '../../../test/support/http.js';
import { waitFor } from '../../../test/support/wait.js';
import { type NotifyServer, startNotifyProcess } from '../../../test/support/notify-process.js';

// The whole stack as an operator runs it: `notify start` (api, relay and dispatcher in one child
// process) against real PostgreSQL and Kafka, delivering to a real local HTTP receiver.

const KEY = 'e2e-key-0123456789';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

let t: TestDatabase;
let kafka: TestKafka;
let receiver: HttpReceiver;
let hookUrl: string;
let notify: NotifyServer;

beforeAll(async () => {
  [t, kafka, receiver] = await Promise.all([createTestDatabase(), createTestKafka(), startHttpReceiver()]);
  hookUrl = `${receiver.url}/hook`;
  notify = await startNotifyProcess([], {
    DATABASE_URL: t.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    NOTIFY_TOPIC_PARTITIONS: '2',
    // Not the default (1), and not NOTIFY_TOPIC_PARTITIONS: the first test tells which topics got which.
    NOTIFY_RETRY_TOPIC_PARTITIONS: '3',
    PORT: '0',
    NOTIFY_API_KEYS: `acme:${KEY}`,
    NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
    // Two attempts, 200 ms apart: a notification that fails twice is dead within a second.
    NOTIFY_MAX_ATTEMPTS: '2',
    NOTIFY_BASE_DELAY_MS: '200',
    NOTIFY_MAX_DELAY_MS: '400',
    NOTIFY_JITTER: '0',
    NOTIFY_RELAY_POLL_MS: '100',
    // debug: a sent delivery's line (which carries the trace id checked below) is a debug line.
    LOG_LEVEL: 'debug',
  });
}, 120_000);

afterAll(async () => {
  const [code] = await stopNotifyAndCloseKafka(kafka, notify);
  expect(code).toBe(0); // graceful SIGTERM shutdown of every role
  await receiver?.close();
  await t?.close();
}, 60_000);

const api = (path: string, init: RequestInit = {}) =>
  fetchPastShedding(`${notify.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', ...init.headers },
  });

async function waitForState(id: string, state: string, timeoutMs = 30_000) {
  return waitFor(
    async () => {
      const n = NotificationView.parse(await (await api(`/v1/notifications/${id}`)).json());
      return n.state === state ? n : undefined;
    },
    { timeoutMs, intervalMs: 100, message: `${id} to be ${state}` },
  );
}

describe('notify start, end to end', () => {
  it('created every topic it needs, with the configured partitions (delay topics: NOTIFY_RETRY_TOPIC_PARTITIONS)', async () => {
    const meta = await kafka.admin.fetchTopicMetadata({ topics: [kafka.topic('requests'), kafka.topic('events'), kafka.topic('dlq')] });
    expect(meta.topics.map((m) => m.partitions.length)).toEqual([2, 2, 2]);
    const delayTopics = (await kafka.admin.listTopics()).filter((n) => n.startsWith(`${kafka.prefix}.retry.`));
    expect(delayTopics.length).toBeGreaterThan(0);
    const delay = await kafka.admin.fetchTopicMetadata({ topics: delayTopics });
    expect(delay.topics.map((m) => m.partitions.length)).toEqual(delayTopics.map(() => 3));
  });

  it('publishes its attempt budget, default expiry and event policy to notify_settings, for every enqueuer', async () => {
    const { rows } = await t.pool.query('SELECT max_attempts, default_ttl_ms, events FROM notify_settings');
    expect(rows).toEqual([{ max_attempts: 2, default_ttl_ms: expect.anything(), events: 'all' }]);
    expect(Number(rows[0].default_ttl_ms)).toBe(86_400_000);
  });

  it('is ready: database and Kafka reachable', async () => {
    const res = await fetch(`${notify.adminUrl}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok', checks: { database: 'ok', kafka: 'ok', started: 'ok' } });
  });

  it('delivers a webhook: POST → 202, the receiver gets it once, GET shows sent; the trace reaches the dispatcher', async () => {
    const res = await api('/v1/notifications', {
      method: 'POST',
      body: JSON.stringify({ channel: 'webhook', to: hookUrl, body: '{"order":42}' }),
      headers: { traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01`, 'idempotency-key': 'e2e-1' },
    });
    expect(res.status).toBe(202);
    const queued = NotificationView.parse(await res.json());

    const sent = await waitForState(queued.id, 'sent');
    expect(sent).toMatchObject({ attempts: 1, last_error: null, next_attempt_at: null });
    const mine = receiver.requests.filter((r) => r.headers['webhook-id'] === queued.id);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.body).toContain('{\\"order\\":42}');

    const attempts = AttemptList.parse(await (await api(`/v1/notifications/${queued.id}/attempts`)).json());
    expect(attempts.data).toEqual([expect.objectContaining({ attempt: 1, outcome: 'sent', provider_status: '200' })]);

    // One delivery, one trace: the dispatcher's log line for this notification carries the caller's trace id.
    const line = await waitFor(
      () =>
        notify
          .output()
          .split('\n')
          .filter((l) => l.includes(queued.id) && l.includes('"role":"dispatcher"'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.msg === 'notification sent'),
      { timeoutMs: 5_000, message: 'the dispatcher log line' },
    );
    expect(line.traceId).toBe(TRACE_ID);

    // Status events other teams consume: queued then sent, on <prefix>.events.
    const events = (await kafka.readAll('events', 2))
      .map((m) => parseStatusEvent(m.value))
      .flatMap((p) => (p.ok && p.message.id === queued.id ? [p.message.type] : []));
    expect(events).toEqual(['notification.queued', 'notification.sent']);
  });

  it('a dead webhook comes back with a manual retry and is then sent', async () => {
    receiver.script({ status: 503, body: 'busy' }, { status: 503, body: 'busy' }); // both attempts of the budget fail
    const res = await api('/v1/notifications', {
      method: 'POST',
      body: JSON.stringify({ channel: 'webhook', to: hookUrl, body: 'retry me' }),
    });
    expect(res.status).toBe(202);
    const { id } = NotificationView.parse(await res.json());
    const dead = await waitForState(id, 'dead');
    expect(dead).toMatchObject({ dead_reason: 'exhausted', attempts: 2, max_attempts: 2 });

    const retry = await api(`/v1/notifications/${id}/retry`, { method: 'POST' });
    expect(retry.status).toBe(202);
    const sent = await waitForState(id, 'sent');
    expect(sent).toMatchObject({ attempts: 3, max_attempts: 4 });
    const attempts = AttemptList.parse(await (await api(`/v1/notifications/${id}/attempts`)).json());
    expect(attempts.data.map((a) => a.outcome)).toEqual(['transient', 'transient', 'sent']);
  });

  it('413 for a chunked body that grows past 64 KiB on a real socket', async () => {
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${notify.url}/v1/notifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      // The server may answer and close before every chunk is written.
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)));
      for (let i = 0; i < 10; i++) req.write(Buffer.alloc(16 * 1024, 0x20));
      req.end();
    });
    expect(status).toBe(413);
  });

  it('exposes the delivery in /metrics', async () => {
    const text = await (await fetch(`${notify.adminUrl}/metrics`)).text();
    expect(text).toMatch(/notify_attempts_total\{outcome="sent",channel="webhook"\} [1-9]/);
    expect(text).toMatch(/notify_provider_latency_seconds_count\{channel="webhook",outcome="sent"\} [1-9]/);
    expect(text).toMatch(/notify_relay_published_total [1-9]/);
    expect(text).toMatch(/notify_dead_total\{channel="webhook",reason="exhausted"\} 1/);
    expect(text).toMatch(/notify_notifications\{state="sent",channel="webhook"\} 2/);
  });
});
