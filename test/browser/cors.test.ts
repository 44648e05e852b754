import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '@notify/api';
import { createDb } from '@notify/runtime';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { serveFetch } from '../support/http.js';
import { type NotifyServer, startNotifyProcess } from '../support/notify-process.js';

// NOTIFY_CORS_ORIGINS in a real browser: pages on two other origins (other ports of 127.0.0.1)
// call `notify start --roles api` with fetch(), as a tenant's own admin page would. Chromium
// decides what the page may read from the CORS headers, preflights included: the test asserts
// what the page sees, not the headers.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/lib/chromium/chromium';
const KEY = 'cors-acme-key-0123456789';

let t: TestDatabase;
let notify: NotifyServer;
let allowedSite: Server;
let otherSite: Server;
let browser: Browser;

/** A site that serves one empty page, its origin. */
async function site(): Promise<{ server: Server; origin: string }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>page</title>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let allowedOrigin = '';
let otherOrigin = '';

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH`,
    );
  }
  t = await createTestDatabase();
  const a = await site();
  const b = await site();
  [allowedSite, allowedOrigin, otherSite, otherOrigin] = [a.server, a.origin, b.server, b.origin];
  notify = await startNotifyProcess(['--roles', 'api'], {
    DATABASE_URL: t.url,
    PORT: '0',
    NOTIFY_API_KEYS: `acme:${KEY}`,
    NOTIFY_CORS_ORIGINS: allowedOrigin,
  });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await notify?.stop();
  allowedSite?.close();
  otherSite?.close();
  await t?.close();
});

/** What a page on `origin` gets from fetch(`path` on the API, init): the status, readable headers and body, or the error a refused request throws. */
async function fetchFrom(
  origin: string,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string } = {},
  api = notify.url,
): Promise<{ status: number; headers: Record<string, string>; body: string } | { error: string }> {
  const page: Page = await browser.newPage();
  try {
    await page.goto(`${origin}/`);
    return await page.evaluate(
      async (url, init) => {
        try {
          const res = await fetch(url, init);
          const headers: Record<string, string> = {};
          res.headers.forEach((v, k) => (headers[k] = v));
          return { status: res.status, headers, body: await res.text() };
        } catch (err) {
          return { error: String(err) };
        }
      },
      `${api}${path}`,
      init,
    );
  } finally {
    await page.close();
  }
}

describe('CORS for /v1 (NOTIFY_CORS_ORIGINS)', () => {
  it('a page on a listed origin enqueues with its key (a preflighted POST) and reads the answer and its exposed headers', async () => {
    const res = await fetchFrom(allowedOrigin, '/v1/notifications', {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': 'cors-1' },
      body: JSON.stringify({ channel: 'email', to: 'ada@example.com', subject: 'Hi', body: 'Hello' }),
    });
    expect(res).toMatchObject({ status: 202 });
    if (!('status' in res)) throw new Error(res.error);
    const id = (JSON.parse(res.body) as { id: string }).id;
    expect(res.headers.location).toBe(`/v1/notifications/${id}`);
    expect(res.headers['x-request-id']).toMatch(/^req_/);

    const read = await fetchFrom(allowedOrigin, `/v1/notifications/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(read).toMatchObject({ status: 200 });
    if ('status' in read) expect(JSON.parse(read.body)).toMatchObject({ id, state: 'queued' });
  });

  it('the page can read a refusal too: a wrong key is a 401 problem, not a network error', async () => {
    const res = await fetchFrom(allowedOrigin, '/v1/notifications', { headers: { authorization: 'Bearer wrong-key-0123456789' } });
    expect(res).toMatchObject({ status: 401 });
    if ('status' in res) expect(JSON.parse(res.body)).toMatchObject({ code: 'unauthorized' });
  });

  it("the page reads a wrong path's 404 and a wrong method's 405 (the preflight, the same on every path, let them through)", async () => {
    const missing = await fetchFrom(allowedOrigin, '/v1/nothing-here', { headers: { authorization: `Bearer ${KEY}` } });
    expect(missing).toMatchObject({ status: 404 });
    const wrong = await fetchFrom(allowedOrigin, '/v1/notifications', { method: 'DELETE', headers: { authorization: `Bearer ${KEY}` } });
    expect(wrong).toMatchObject({ status: 405 });
    if ('status' in wrong) expect(JSON.parse(wrong.body)).toMatchObject({ code: 'method_not_allowed' });
  });

  it('a page on another origin is refused by the browser: a GET and a POST (both preflighted: they carry a key)', async () => {
    const get = await fetchFrom(otherOrigin, '/v1/notifications', { headers: { authorization: `Bearer ${KEY}` } });
    expect(get).toEqual({ error: expect.stringMatching(/Failed to fetch/) });
    const post = await fetchFrom(otherOrigin, '/v1/notifications', {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'email', to: 'eve@example.com', body: 'x' }),
    });
    expect(post).toEqual({ error: expect.stringMatching(/Failed to fetch/) });
    // Refused at the preflight: nothing was queued for it.
    const { rows } = await t.pool.query("SELECT count(*)::int AS n FROM notifications WHERE recipient = 'eve@example.com'");
    expect(rows[0].n).toBe(0);
  });

  it('a page reads an overloaded answer: the preflight is not shed, the POST it announces is, with its Retry-After', async () => {
    // The API in this process, its event loop reported 500 ms late throughout (NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS=100),
    // and a database that does not answer (port 1): nothing may reach it.
    const db = createDb({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1, connectionWaitMs: 300 });
    const api = await serveFetch(
      createApp({
        db,
        config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } },
        corsOrigins: [allowedOrigin],
        maxEventLoopDelayMs: 100,
        eventLoopPressure: { delayMs: () => 500, utilization: () => 0, stop: () => {} },
      }).fetch,
    );
    try {
      const res = await fetchFrom(
        allowedOrigin,
        '/v1/notifications',
        {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': 'cors-shed-1' },
          body: JSON.stringify({ channel: 'email', to: 'ada@example.com', body: 'Hello' }),
        },
        api.url,
      );
      expect(res).toMatchObject({ status: 503, headers: { 'retry-after': '1' } });
      if ('status' in res) expect(JSON.parse(res.body)).toMatchObject({ code: 'overloaded' });
    } finally {
      await api.close();
      await db.destroy();
    }
  });

  it('the console stays same-origin only, even for a listed origin', async () => {
    const res = await fetchFrom(allowedOrigin, '/console/login');
    expect(res).toEqual({ error: expect.stringMatching(/Failed to fetch/) });
  });
});
