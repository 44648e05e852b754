import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { type NotifyServer, startNotifyProcess } from '../../../test/support/notify-process.js';

// Every way the API answers 204, through the compiled `notify start`: no Content-Type, since there
// is no content (@hono/node-server gave each text/plain; NoContentServerResponse drops it).
vi.setConfig({ testTimeout: 120_000 });

const KEY = 'nk_nocontent_0123456789abcdef';
const ORIGIN = 'https://admin.example.com';
let t: TestDatabase;
let notify: NotifyServer | undefined;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await notify?.stop();
  await t?.close();
});

/** One request over real HTTP: its status and headers as Node parsed them. */
const send = (url: string, method: string, headers: Record<string, string> = {}, body?: string) =>
  new Promise<{ status: number; headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers }));
    });
    req.on('error', reject);
    req.end(body);
  });

describe('a 204 from notify start', () => {
  it('has no Content-Type: DELETE, OPTIONS and a CORS preflight; answers with a body keep theirs', async () => {
    notify = await startNotifyProcess(['--roles', 'api'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: '127.0.0.1:1',
      PORT: '0',
      NOTIFY_API_KEYS: `acme:${KEY}`,
      NOTIFY_CORS_ORIGINS: ORIGIN,
    });
    const auth = { authorization: `Bearer ${KEY}` };
    const created = await send(
      `${notify.url}/v1/suppressions`,
      'POST',
      { ...auth, 'content-type': 'application/json' },
      JSON.stringify({ channel: 'email', to: 'ada@example.com' }),
    );
    expect(created.status).toBe(201);
    expect(created.headers['content-type']).toMatch(/^application\/json/);

    const answers = {
      delete: await send(`${notify.url}/v1/suppressions?channel=email&to=ada@example.com`, 'DELETE', auth),
      options: await send(`${notify.url}/v1/notifications`, 'OPTIONS', auth),
      preflight: await send(`${notify.url}/v1/notifications`, 'OPTIONS', {
        origin: ORIGIN,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      }),
    };
    for (const [name, answer] of Object.entries(answers)) {
      expect({ name, status: answer.status, contentType: answer.headers['content-type'] }).toEqual({
        name,
        status: 204,
        contentType: undefined,
      });
    }
    expect(answers.options.headers.allow).toBe('GET, HEAD, POST, OPTIONS');
    expect(answers.preflight.headers['access-control-allow-origin']).toBe(ORIGIN);

    // A problem keeps its type: the same DELETE again finds nothing.
    const missing = await send(`${notify.url}/v1/suppressions?channel=email&to=ada@example.com`, 'DELETE', auth);
    expect(missing.status).toBe(404);
    expect(missing.headers['content-type']).toBe('application/problem+json');
  });
});
