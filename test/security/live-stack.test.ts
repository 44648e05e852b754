/**
 * The whole service as an operator runs it (`notify start`, every role in one child process,
 * LOG_LEVEL=trace, so every log line the code can write is written), with real secrets configured:
 * seeded and issued API keys, a global and a per-tenant webhook signing secret, an SMTP password
 * and an SMS gateway token. After deliveries that succeed, fail, retry and die, and after
 * hostile requests (a secret sent as a bearer token, keys in query strings, raw malformed HTTP):
 * - no secret, in any encoding we could think of, appears in the process output or in any API
 *   answer (notifications, attempts, lists, problems, /openapi.json; /metrics and /readyz on the admin port);
 * - no message content planted in a body appears in the logs;
 * - webhooks really were signed with the right secret (the test verifies the signatures);
 * - raw malformed HTTP never takes the process down.
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startHttpReceiver, startSmtpSink, type HttpReceiver, type SmtpSink } from '@notify/providers/testing';
import { webhookSecretKey } from '@notify/providers';
import { verifyWebhookSignature } from '@notify/providers/testing';
import { fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { fetchPastShedding } from '../support/http.js';
import { waitFor } from '../support/wait.js';
import { startChaosReceiver, type ChaosReceiver } from '../support/chaos/receiver.js';
import { ChildSet, type NotifyChild, chaosEnv, stackTopics } from '../support/chaos/stack.js';
import { issueTestKey, type TestKey } from '../support/chaos/tenants.js';
import { ensureTopics } from '@notify/cli';

const MARKER = `BODYMARKER${randomBytes(6).toString('hex')}`;
const seededKey = `nk_seed_${randomBytes(24).toString('base64url')}`;
const globalSecret = `whsec_${randomBytes(32).toString('base64')}`;
const tenantSecret = `whsec_${randomBytes(32).toString('base64')}`;
const smtpPassword = `smtppw${randomBytes(12).toString('hex')}`;
const smsToken = `smstok${randomBytes(12).toString('hex')}`;

let t: TestDatabase;
let receiver: ChaosReceiver;
let smtp: SmtpSink;
let sms: HttpReceiver;
let stack: NotifyChild;
let issued: TestKey;
let env: Record<string, string>;
const children = new ChildSet();
const apiOutput: string[] = [];

/** Every form in which a secret could leak: itself, and for signing secrets the key bytes in hex and base64. */
function leakForms(): Record<string, string[]> {
  const keyForms = (s: string) => {
    const key = webhookSecretKey(s);
    return [s, s.slice('whsec_'.length), key.toString('hex'), key.toString('base64url')];
  };
  return {
    'seeded API key': [seededKey],
    'issued API key': [issued.key],
    'global signing secret': keyForms(globalSecret),
    'tenant signing secret': keyForms(tenantSecret),
    'SMTP password': [smtpPassword, encodeURIComponent(smtpPassword)],
    'SMS token': [smsToken, Buffer.from(`AC123:${smsToken}`).toString('base64')],
  };
}

async function api(path: string, init: RequestInit & { key?: string; admin?: boolean } = {}): Promise<Response> {
  const res = await fetchPastShedding(`${init.admin ? stack.adminUrl : stack.url}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${init.key ?? seededKey}`,
      'content-type': 'application/json',
      ...(init.headers as Record<string, string>),
    },
  });
  const text = await res.text();
  // The answer only (status, headers, body): the request path may carry what the test sent on purpose.
  apiOutput.push(`${res.status} ${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n${text}`);
  return new Response(text, { status: res.status, headers: res.headers });
}

beforeAll(async () => {
  t = await createTestDatabase();
  [receiver, smtp, sms] = await Promise.all([startChaosReceiver(), startSmtpSink(), startHttpReceiver()]);
  issued = await issueTestKey(fromKysely(t.db), 'globex');
  await t.pool.query('UPDATE tenants SET webhook_signing_secret = $1 WHERE id = $2', [tenantSecret, 'globex']);
  const prefix = `${inject('runId')}.sec.${randomBytes(3).toString('hex')}`;
  env = chaosEnv({
    databaseUrl: t.url,
    brokers: inject('kafkaBrokers').split(','),
    prefix,
    extra: {
      LOG_LEVEL: 'trace',
      NOTIFY_API_KEYS: `acme:${seededKey}`,
      NOTIFY_WEBHOOK_SECRET: globalSecret,
      NOTIFY_SMTP_URL: `smtp://mailer:${smtpPassword}@127.0.0.1:${smtp.port}`,
      NOTIFY_SMS_URL: sms.url,
      NOTIFY_SMS_ACCOUNT_ID: 'AC123',
      NOTIFY_SMS_AUTH_TOKEN: smsToken,
      NOTIFY_SMS_FROM: '+15005550006',
      NOTIFY_MAX_ATTEMPTS: '3',
    },
  });
  const kafka = new Kafka({ brokers: env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, stackTopics(env), 2);
  await admin.disconnect();
  stack = await children.start('stack', ['api', 'relay', 'dispatcher'], env);
}, 120_000);

afterAll(async () => {
  await children.stopAll();
  await children.killAll();
  const kafka = new Kafka({ brokers: env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.deleteTopics({ topics: stackTopics(env) }).catch(() => {});
  await admin.disconnect();
  await Promise.all([receiver?.close(), smtp?.close(), sms?.close()]);
  await t?.close();
}, 60_000);

describe('secrets never leave the process', () => {
  const ids: string[] = [];

  it('deliveries of every kind: signed webhooks (global and tenant secret), failing, dying, email, SMS', async () => {
    receiver.setBehaviour((req) =>
      req.path.endsWith('/flaky') && req.seen === 0
        ? { kind: 'status', status: 503 }
        : req.path.endsWith('/broken')
          ? { kind: 'status', status: 500 }
          : { kind: 'ok' },
    );
    const posts: [string | undefined, Record<string, unknown>][] = [
      [undefined, { channel: 'webhook', to: `${receiver.url}/ok`, body: `hello ${MARKER}`, data: { secret: MARKER } }],
      [undefined, { channel: 'webhook', to: `${receiver.url}/flaky`, body: `flaky ${MARKER}` }],
      [undefined, { channel: 'webhook', to: `${receiver.url}/broken`, body: `broken ${MARKER}` }],
      [issued.key, { channel: 'webhook', to: `${receiver.url}/tenant`, body: `tenant ${MARKER}` }],
      [undefined, { channel: 'email', to: 'someone@example.com', subject: `subject ${MARKER}`, body: `mail ${MARKER}` }],
      [undefined, { channel: 'sms', to: '+14155550100', body: `sms ${MARKER}` }],
    ];
    for (const [key, body] of posts) {
      const res = await api('/v1/notifications', { method: 'POST', body: JSON.stringify(body), ...(key ? { key } : {}) });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { id: string }).id);
    }
    await waitFor(
      async () => {
        const { rows } = await t.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM notifications WHERE state = 'queued'");
        return rows[0]!.n === 0;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'every notification terminal' },
    );
    for (const [i, id] of ids.entries()) {
      await api(`/v1/notifications/${id}`, i === 3 ? { key: issued.key } : {});
      await api(`/v1/notifications/${id}/attempts`, i === 3 ? { key: issued.key } : {});
    }
    await api('/v1/notifications?limit=100');
    const { rows } = await t.pool.query<{ state: string; n: number }>(
      'SELECT state, count(*)::int AS n FROM notifications GROUP BY state ORDER BY state',
    );
    expect(Object.fromEntries(rows.map((r) => [r.state, r.n]))).toMatchObject({ sent: expect.any(Number), dead: expect.any(Number) });

    // The webhooks were signed, acme's with the global secret and globex's with its own.
    const webhookRequests = receiver.deliveries.length;
    expect(webhookRequests).toBeGreaterThanOrEqual(4);
    expect(sms.requests.length).toBeGreaterThanOrEqual(1);
    expect(sms.requests[0]!.headers.authorization).toBe(`Basic ${Buffer.from(`AC123:${smsToken}`).toString('base64')}`);
  }, 90_000);

  it('webhook signatures verify with the configured secrets', async () => {
    // The chaos receiver only logs ids; re-send one of each tenant to a capturing receiver.
    const capture = await startHttpReceiver();
    try {
      for (const key of [seededKey, issued.key]) {
        const res = await api('/v1/notifications', {
          method: 'POST',
          key,
          body: JSON.stringify({ channel: 'webhook', to: `${capture.url}/sig`, body: 'signed?' }),
        });
        expect(res.status).toBe(202);
      }
      await waitFor(() => capture.requests.length >= 2, { timeoutMs: 30_000, message: 'two signed webhooks' });
      const results = capture.requests.map((r) => ({
        global: verifyWebhookSignature({ secret: globalSecret, headers: r.headers, body: r.body, now: new Date() }).ok,
        tenant: verifyWebhookSignature({ secret: tenantSecret, headers: r.headers, body: r.body, now: new Date() }).ok,
      }));
      expect(results).toEqual(
        expect.arrayContaining([
          { global: true, tenant: false },
          { global: false, tenant: true },
        ]),
      );
    } finally {
      await capture.close();
    }
  }, 60_000);

  it('hostile requests: a secret as the bearer token, keys in the query string, content in a field name', async () => {
    for (const wrong of [globalSecret, tenantSecret, smtpPassword, smsToken]) {
      expect((await api('/v1/notifications', { key: wrong })).status).toBe(401);
    }
    expect((await api(`/v1/notifications?api_key=${encodeURIComponent(seededKey)}`)).status).toBe(400);
    expect((await api(`/v1/notifications?to=${encodeURIComponent(globalSecret)}`)).status).toBe(200);
    const res = await api('/v1/notifications', {
      method: 'POST',
      body: JSON.stringify({ channel: 'webhook', to: 'https://h.example.com', body: 'x', [`k${MARKER}`]: 1 }),
    });
    expect(res.status).toBe(422);
  });

  it('the ops endpoints hold no secret either', async () => {
    for (const path of ['/openapi.json', '/docs']) expect((await api(path)).status, path).toBe(200);
    for (const path of ['/metrics', '/readyz', '/healthz']) {
      expect((await api(path, { admin: true })).status, path).toBe(200);
      // Not on the public port: the admin port (127.0.0.1 by default) serves them.
      expect((await api(path)).status, path).toBe(404);
    }
  });

  it('raw malformed HTTP never takes the process down', async () => {
    const { port } = new URL(stack.url);
    const raw = [
      Buffer.from('GARBAGE\r\n\r\n'),
      Buffer.from('GET /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n', 'latin1'),
      Buffer.from(`GET /v1/notifications/\xc3\x28 HTTP/1.1\r\nHost: x\r\n\r\n`, 'latin1'),
      Buffer.from('GET /v1/notifications HTTP/1.1\r\nHost: x\r\nX-Nul: a\x00b\r\n\r\n', 'latin1'),
      Buffer.from(`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`),
      Buffer.from(
        'POST /v1/notifications HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      ),
      Buffer.from(
        `POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${seededKey}\r\nContent-Length: 10\r\n\r\n{"a":`,
      ),
      Buffer.from('POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!'),
      Buffer.from(
        `POST /v1/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${seededKey}\r\nContent-Length: 20\r\n\r\n{"channel":"\xff\xfe"}`,
        'latin1',
      ),
    ];
    for (const bytes of raw) {
      const answer = await new Promise<string>((resolve) => {
        const sock = net.connect(Number(port), '127.0.0.1');
        let got = '';
        sock.setTimeout(1_000, () => sock.destroy());
        sock.on('data', (d) => (got += d.toString('latin1')));
        sock.on('close', () => resolve(got));
        sock.on('error', () => resolve(got));
        sock.write(bytes);
      });
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);
      // Either the HTTP parser refused it (4xx, or a closed connection), or the app answered a 4xx.
      expect(status === 0 || (status >= 400 && status < 500), `${bytes.subarray(0, 60).toString('latin1')} → ${answer.slice(0, 120)}`).toBe(
        true,
      );
      apiOutput.push(answer);
    }
    expect(stack.exited).toBe(false);
    expect((await api('/healthz', { admin: true })).status).toBe(200);
  });

  it('no secret appears in any log line or API answer; no planted content in the logs', async () => {
    // Let the last log lines flush.
    await waitFor(() => stack.output().includes('"msg":"request"'), { timeoutMs: 5_000, message: 'request log lines' });
    const logs = stack.output();
    expect(logs.split('\n').length).toBeGreaterThan(50);
    const answers = apiOutput.join('\n');
    for (const [name, forms] of Object.entries(leakForms())) {
      for (const form of forms) {
        expect(logs.includes(form), `${name} (${form.slice(0, 12)}…) in the logs`).toBe(false);
        expect(answers.includes(form), `${name} (${form.slice(0, 12)}…) in an API answer`).toBe(false);
      }
    }
    expect(logs.includes(MARKER), 'message content in the logs').toBe(false);
  });
});
