/**
 * Status callbacks through the real stack: the dispatcher delivers notifications, their status
 * events go through the outbox to Kafka, the callback service (its own consumer group on
 * `<prefix>.events`) queues them in PostgreSQL and POSTs them to a real local HTTP receiver as
 * Standard Webhooks, verified here with the `standardwebhooks` library as a receiver would.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { parseStatusEvent, type StatusEventV1 } from '@notify/contract';
import { fromKysely } from '@notify/outbox';
import { startHttpReceiver } from '@notify/providers/testing';
import { silentLogger, systemClock } from '@notify/runtime';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { type CallbackService, createCallbackService } from '../src/index.js';
import { type Harness, startHarness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { type Receiver, startReceiver } from './support/receiver.js';

interface Call {
  readonly headers: http.IncomingHttpHeaders;
  readonly body: string;
}

/** A callback receiver: records every request and answers with `answer(call)`; a null answer holds the request open. */
async function startCallbackReceiver(answer: (call: Call, calls: readonly Call[]) => number | null) {
  const calls: Call[] = [];
  const sockets = new Set<Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const call = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      calls.push(call);
      const status = answer(call, calls);
      if (status !== null) res.writeHead(status).end();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callbacks`,
    calls,
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
type CallbackReceiver = Awaited<ReturnType<typeof startCallbackReceiver>>;

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const MAX_ATTEMPTS = 3;
const BACKLOG = 10;

let h: Harness;
let notifications: Receiver;
let callbacks: CallbackService;
const receivers: CallbackReceiver[] = [];

beforeAll(async () => {
  h = await startHarness({ retry: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 100, maxDelayMs: 400 } });
  notifications = await startReceiver(() => ({ status: 200 }));
  await h.startDispatcher({ webhook: createHttpTestProvider() });
  callbacks = createCallbackService(
    {
      topicPrefix: h.kafka.prefix,
      groupId: `${h.kafka.prefix}.callbacks`,
      maxBacklogPerTenant: BACKLOG,
      retry: { maxAttempts: MAX_ATTEMPTS, baseDelayMs: 100, maxDelayMs: 400, jitter: 0 },
      sendTimeoutMs: 500,
      allowCidrs: ['127.0.0.1/32'],
      signingSecret: SECRET,
      pollIntervalMs: 50,
    },
    { db: fromKysely(h.db.db), kafka: h.kafka.kafka, clock: systemClock, logger: silentLogger },
  );
  await callbacks.start();
});

afterAll(async () => {
  await callbacks?.stop(1_000);
  for (const r of receivers) await r.close();
  await notifications?.close();
  await h?.close();
});

async function register(tenantId: string, url: string, events: readonly string[]): Promise<void> {
  await h.db.pool.query(
    `INSERT INTO callback_endpoints (tenant_id, url, events, created_at, updated_at) VALUES ($1, $2, $3, now(), now())`,
    [tenantId, url, events],
  );
}

async function deliveries(tenantId: string) {
  const { rows } = await h.db.pool.query<{ state: string; attempts: number; event_type: string; last_status: string | null }>(
    'SELECT state, attempts, event_type, last_status FROM callback_deliveries WHERE tenant_id = $1 ORDER BY id',
    [tenantId],
  );
  return rows;
}

async function send(tenantId: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    ids.push(await h.enqueue({ tenant_id: tenantId, channel: 'webhook', to: `${notifications.url}/${tenantId}/${i}`, body: `hello ${i}` }));
  }
  return ids;
}

describe('status callbacks', () => {
  // First: no tenant has an endpoint yet.
  it('reads no events while no tenant has a callback endpoint; one registered later gets what follows, not what it missed', async () => {
    await waitFor(() => callbacks.intakePaused(), { timeoutMs: 10_000, message: 'the intake to pause with no endpoint' });
    const topic = h.kafka.topic('events');
    const groupId = `${h.kafka.prefix}.callbacks`;
    const admin = h.kafka.kafka.admin();
    await admin.connect();
    const late = await startCallbackReceiver(() => 200);
    try {
      const ends = async () =>
        (await admin.fetchTopicOffsets(topic)).map(({ partition, offset }) => ({ partition, offset: Number(offset) }));
      const published = async () => (await ends()).reduce((n, p) => n + p.offset, 0);
      const start = await published();
      const missed = await send('cb-late', 2);
      // Their queued and sent events reach the topic, and the group's offsets move past them: skipped, not left behind.
      await waitFor(async () => (await published()) >= start + 4, { timeoutMs: 30_000, message: 'four status events published' });
      await waitFor(
        async () => {
          const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
          const end = await ends();
          return end.every((e) => Number(committed!.partitions.find((p) => p.partition === e.partition)?.offset) === e.offset);
        },
        { timeoutMs: 10_000, message: "the group's offsets at the end of the topic" },
      );
      expect(callbacks.intakePaused()).toBe(true);

      await register('cb-late', late.url, ['notification.queued', 'notification.sent']);
      await waitFor(() => !callbacks.intakePaused(), { timeoutMs: 10_000, message: 'the intake to resume' });
      const [id] = await send('cb-late', 1);
      await waitFor(() => late.calls.length >= 2, { timeoutMs: 30_000, message: 'two callbacks after the registration' });
      const { rows } = await h.db.pool.query<{ notification_id: string; event_type: string }>(
        "SELECT notification_id, event_type FROM callback_deliveries WHERE tenant_id = 'cb-late' ORDER BY id",
      );
      expect(rows).toEqual([
        { notification_id: id, event_type: 'notification.queued' },
        { notification_id: id, event_type: 'notification.sent' },
      ]);
      expect(late.calls.map((c) => (JSON.parse(c.body) as { id: string }).id)).not.toContain(missed[0]);
    } finally {
      await admin.disconnect();
      await late.close();
      await h.db.pool.query("DELETE FROM callback_endpoints WHERE tenant_id = 'cb-late'");
    }
  });

  it('POSTs the chosen status events, signed (standardwebhooks verifies them), with the StatusEvent v1 payload', async () => {
    const receiver = await startCallbackReceiver(() => 204);
    receivers.push(receiver);
    await register('cb-signed', receiver.url, ['notification.sent']);
    const ids = await send('cb-signed', 3);
    await send('cb-none', 2); // a tenant without a callback: nothing queued for it

    await waitFor(() => receiver.calls.length >= 3, { timeoutMs: 30_000, message: 'three callbacks' });
    const wh = new Webhook(SECRET);
    const events = receiver.calls.map((call) => wh.verify(call.body, call.headers as Record<string, string>) as StatusEventV1);
    expect(events.map((e) => e.id).sort()).toEqual([...ids].sort());
    for (const [i, e] of events.entries()) {
      expect(e).toMatchObject({ v: 1, type: 'notification.sent', tenant_id: 'cb-signed', state: 'sent', attempts: 1 });
      // The body is the event exactly as other teams read it from Kafka.
      expect(parseStatusEvent(receiver.calls[i]!.body)).toEqual({ ok: true, message: e });
      expect(receiver.calls[i]!.headers['webhook-id']).toMatch(/^evt_[0-9a-f]{32}$/);
    }
    // A tampered body fails verification: the signature covers it.
    expect(() =>
      wh.verify(receiver.calls[0]!.body.replace('sent', 'dead'), receiver.calls[0]!.headers as Record<string, string>),
    ).toThrow();
    // The receiver counts a call when it arrives; the sender records it after the answer.
    const recorded = await waitFor(
      async () => {
        const rows = await deliveries('cb-signed');
        return rows.every((d) => d.state !== 'pending') ? rows : undefined;
      },
      { timeoutMs: 10_000, message: 'the three deliveries recorded' },
    );
    expect(recorded.map((d) => [d.state, d.attempts])).toEqual([
      ['delivered', 1],
      ['delivered', 1],
      ['delivered', 1],
    ]);
    expect(await deliveries('cb-none')).toEqual([]);
  });

  it('retries a failing receiver with the same webhook-id, and gives up after the maximum attempts', async () => {
    // The first two calls of each event fail (503), the third succeeds.
    const flaky = await startCallbackReceiver((call, calls) =>
      calls.filter((c) => c.headers['webhook-id'] === call.headers['webhook-id']).length <= 2 ? 503 : 200,
    );
    const broken = await startCallbackReceiver(() => 500);
    receivers.push(flaky, broken);
    await register('cb-flaky', flaky.url, ['notification.sent']);
    await register('cb-broken', broken.url, ['notification.sent']);
    await send('cb-flaky', 1);
    await send('cb-broken', 1);

    await waitFor(async () => (await deliveries('cb-flaky'))[0]?.state === 'delivered', { timeoutMs: 30_000, message: 'flaky delivered' });
    expect(flaky.calls).toHaveLength(3);
    expect(new Set(flaky.calls.map((c) => c.headers['webhook-id'])).size).toBe(1);
    expect((await deliveries('cb-flaky'))[0]).toMatchObject({ attempts: 3, last_status: '200' });

    await waitFor(async () => (await deliveries('cb-broken'))[0]?.state === 'failed', { timeoutMs: 30_000, message: 'broken failed' });
    expect(broken.calls).toHaveLength(MAX_ATTEMPTS);
    expect((await deliveries('cb-broken'))[0]).toMatchObject({ attempts: MAX_ATTEMPTS, last_status: '500' });
  });

  it('a callback that never answers does not hold up deliveries; its backlog is bounded and the excess counted', async () => {
    const hanging = await startCallbackReceiver(() => null);
    receivers.push(hanging);
    await register('cb-hanging', hanging.url, ['notification.queued', 'notification.sent']);
    const ids = await send('cb-hanging', 15);

    // Every notification is delivered while the callback receiver has answered nothing.
    await waitFor(
      async () => {
        const { rows } = await h.db.pool.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM notifications WHERE id = ANY($1) AND state = 'sent'",
          [ids],
        );
        return rows[0]!.n === ids.length;
      },
      { timeoutMs: 30_000, message: 'all 15 sent' },
    );
    // 30 events (queued + sent) for this tenant; at most BACKLOG pending, the rest dropped and counted.
    await waitFor(
      async () => {
        const { rows } = await h.db.pool.query<{ dropped: string }>(
          "SELECT dropped FROM callback_endpoints WHERE tenant_id = 'cb-hanging'",
        );
        return Number(rows[0]!.dropped) + (await deliveries('cb-hanging')).length === 30;
      },
      { timeoutMs: 30_000, message: 'every event queued or dropped' },
    );
    const rows = await deliveries('cb-hanging');
    expect(rows).toHaveLength(BACKLOG);
    expect(rows.every((r) => r.state === 'pending')).toBe(true);
    // The sender reaches the hanging receiver on its own schedule, not by the time the backlog is full.
    await waitFor(() => hanging.calls.length > 0, { timeoutMs: 10_000, message: 'the callback sender to call the hanging receiver' });
  });

  it('checks at send time: a URL the SSRF policy refuses, a 4xx answer and a removed endpoint fail at once, nothing retried', async () => {
    const gone = await startCallbackReceiver(() => 410);
    receivers.push(gone);
    // Registered behind the API's back: 127.0.0.2 is outside the allow-list (127.0.0.1/32).
    await register('cb-ssrf', 'http://127.0.0.2:9/callbacks', ['notification.sent']);
    await register('cb-gone', gone.url, ['notification.sent']);
    await send('cb-ssrf', 1);
    await send('cb-gone', 1);
    await h.db.pool.query(
      `INSERT INTO callback_deliveries (tenant_id, event_id, notification_id, event_type, payload, next_attempt_at, created_at, updated_at)
       VALUES ('cb-removed', 'e1', 'ntf_x', 'notification.sent', '{}', now(), now(), now())`,
    );
    for (const [tenant, status] of [
      ['cb-ssrf', 'ETARGETREFUSED'],
      ['cb-gone', '410'],
      ['cb-removed', 'no_endpoint'],
    ] as const) {
      await waitFor(async () => (await deliveries(tenant))[0]?.state === 'failed', { timeoutMs: 30_000, message: `${tenant} failed` });
      expect((await deliveries(tenant))[0]).toMatchObject({ attempts: 1, last_status: status });
    }
    expect(gone.calls).toHaveLength(1);
  });

  it('a receiver that answered 200 and then cut its body off, or let it trickle past the timeout, got the callback: delivered, not sent again', async () => {
    const cut = await startHttpReceiver({ defaultResponse: { status: 200, body: 'o', bodyEnd: 'reset' } });
    const trickle = await startHttpReceiver({ defaultResponse: { status: 200, body: 'o', bodyEnd: 'never' } });
    try {
      await register('cb-cut', `${cut.url}/callbacks`, ['notification.sent']);
      await register('cb-trickle', `${trickle.url}/callbacks`, ['notification.sent']);
      await send('cb-cut', 1);
      await send('cb-trickle', 1);
      for (const tenant of ['cb-cut', 'cb-trickle']) {
        await waitFor(async () => (await deliveries(tenant))[0]?.state === 'delivered', {
          timeoutMs: 30_000,
          message: `${tenant} delivered`,
        });
        expect((await deliveries(tenant))[0]).toMatchObject({ attempts: 1, last_status: '200' });
      }
      expect(cut.requests).toHaveLength(1);
      expect(trickle.requests).toHaveLength(1);
    } finally {
      await cut.close();
      await trickle.close();
    }
  });

  it('dead-letters a malformed status event and keeps consuming', async () => {
    const receiver = receivers[0]!;
    const before = receiver.calls.length;
    const producer = h.kafka.kafka.producer();
    await producer.connect();
    await producer.send({ topic: h.kafka.topic('events'), messages: [{ key: 'x', value: '{"v":1,"type":"nonsense"}' }] });
    await producer.disconnect();
    const dlq = await h.kafka.readAll('dlq', 1, 30_000);
    expect(dlq[0]!.value!.toString()).toBe('{"v":1,"type":"nonsense"}');
    expect(dlq[0]!.headers!['dlq-reason']!.toString()).toMatch(/^callbacks: /);
    const [id] = await send('cb-signed', 1);
    await waitFor(() => receiver.calls.length > before, { timeoutMs: 30_000, message: 'a callback after the bad event' });
    expect(JSON.parse(receiver.calls[before]!.body)).toMatchObject({ id, type: 'notification.sent' });
  });
});
