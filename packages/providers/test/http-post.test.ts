import { afterEach, describe, expect, it } from 'vitest';
import http, { type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, LookupFunction, Socket } from 'node:net';
import { HttpTimeoutError, createHttpAgent, httpPost } from '@notify/providers';
import { waitFor } from '../../../test/support/wait.js';
import { startHttpReceiver } from '@notify/providers/testing';

/** A receiver that counts connections and can hold answers until the test releases them. */
interface CountingReceiver {
  readonly url: string;
  readonly port: number;
  /** Connections accepted so far. */
  connections(): number;
  /** Requests received so far, with their connection's number (1 for the first connection). */
  readonly requests: {
    readonly connection: number;
    readonly headers: IncomingHttpHeaders;
    readonly rawHeaders: string[];
    readonly body: Buffer;
  }[];
  /** Answers held back (while `hold` is on), oldest first. */
  readonly held: ServerResponse[];
  /** Most answers held at once. */
  maxHeld(): number;
  hold: boolean;
  /** Answers every held request 200. */
  release(): void;
  close(): Promise<void>;
}

async function startCountingReceiver(): Promise<CountingReceiver> {
  const sockets = new Map<Socket, number>();
  const requests: CountingReceiver['requests'][number][] = [];
  const held: ServerResponse[] = [];
  let maxHeld = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      requests.push({
        connection: sockets.get(req.socket) ?? 0,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
      });
      if (receiver.hold) {
        held.push(res);
        maxHeld = Math.max(maxHeld, held.length);
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  server.on('connection', (socket) => {
    sockets.set(socket, sockets.size + 1);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const receiver: CountingReceiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: () => sockets.size,
    requests,
    held,
    maxHeld: () => maxHeld,
    hold: false,
    release() {
      for (const res of held.splice(0)) res.writeHead(200).end('{}');
    },
    close: async () => {
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets.keys()) s.destroy();
      await done;
    },
  };
  return receiver;
}

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(options: { connectionsPerOrigin?: number; lookup?: LookupFunction } = {}) {
  const receiver = await startCountingReceiver();
  const agent = createHttpAgent({
    connectionsPerOrigin: options.connectionsPerOrigin ?? 8,
    ...(options.lookup ? { lookup: options.lookup } : {}),
  });
  cleanups.push(() => receiver.close());
  cleanups.push(() => agent.destroy());
  return { receiver, agent };
}

const never = () => new AbortController().signal;

// A self-signed certificate for localhost and 127.0.0.1 (P-256, valid until 2126), trusted by no one.
const SELF_SIGNED_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOFY4KQE7PSNCD/7b
/Xc1M88kWDpYjqlYx8Lf38TUeQehRANCAARX3EyGYClzhkaBGsN4PUJbHfh1T9qO
IfPp0Jh+myG9i+V0HDyFRPKKhqTvJU2NOzwn5Oiy8f5OonjoOQlIt90g
-----END PRIVATE KEY-----`;
const SELF_SIGNED_CERT = `-----BEGIN CERTIFICATE-----
MIIBmjCCAUGgAwIBAgIUe+1QKYzLDkjmfGUsxX5qZXR4P6IwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTIwMjEwMDAxM1oYDzIxMjYxMTA4
MTAwMDEzWjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARX3EyGYClzhkaBGsN4PUJbHfh1T9qOIfPp0Jh+myG9i+V0HDyFRPKK
hqTvJU2NOzwn5Oiy8f5OonjoOQlIt90go28wbTAdBgNVHQ4EFgQUNyPdXTKhWtUm
kanUDUHEEgXdnwEwHwYDVR0jBBgwFoAUNyPdXTKhWtUmkanUDUHEEgXdnwEwDwYD
VR0TAQH/BAUwAwEB/zAaBgNVHREEEzARgglsb2NhbGhvc3SHBH8AAAEwCgYIKoZI
zj0EAwIDRwAwRAIgeGb+Udbvnx2vUo+crTbGeEubYKQHzbADUd5tum20Gw8CIBD4
E63WXS5Zm8AbfQcNcDFyi+UORS1zKBJszvs+QQ1+
-----END CERTIFICATE-----`;

describe('httpPost over an undici agent', () => {
  it('sends the headers and the body exactly, and answers with status, headers and body', async () => {
    const { receiver, agent } = await setup();
    const body = JSON.stringify({ text: 'grüße, ✓' });
    const res = await httpPost({
      url: new URL(`${receiver.url}/hooks?x=1`),
      headers: { 'content-type': 'application/json', 'user-agent': 'notify-test/1', 'webhook-id': 'ntf_1' },
      body,
      signal: never(),
      agent,
      maxResponseBytes: 1024,
    });
    expect(res).toMatchObject({ status: 200, truncated: false });
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.body.toString()).toBe('{"ok":true}');
    const [req] = receiver.requests;
    expect(req!.body.equals(Buffer.from(body))).toBe(true);
    // Our headers, the host, keep-alive and the body's length in bytes; nothing else.
    expect(req!.headers).toEqual({
      host: `127.0.0.1:${receiver.port}`,
      connection: 'keep-alive',
      'content-type': 'application/json',
      'user-agent': 'notify-test/1',
      'webhook-id': 'ntf_1',
      'content-length': String(Buffer.byteLength(body)),
    });
  });

  it('reuses its connections for consecutive POSTs to the same origin', async () => {
    const one = await setup({ connectionsPerOrigin: 1 });
    const wide = await setup({ connectionsPerOrigin: 8 });
    for (const { receiver, agent } of [one, wide]) {
      for (let i = 0; i < 6; i++) {
        const res = await httpPost({
          url: new URL(receiver.url),
          headers: {},
          body: String(i),
          signal: never(),
          agent,
          maxResponseBytes: 1024,
        });
        expect(res.status).toBe(200);
      }
    }
    expect(one.receiver.requests.map((r) => r.connection)).toEqual([1, 1, 1, 1, 1, 1]);
    // A connection takes its next request one event-loop turn after an answer: back-to-back POSTs
    // alternate between two connections when the limit allows, and open no more.
    expect(wide.receiver.connections()).toBeLessThanOrEqual(2);
  });

  it('opens at most connectionsPerOrigin connections; further POSTs wait for one and then reuse it', async () => {
    const { receiver, agent } = await setup({ connectionsPerOrigin: 2 });
    receiver.hold = true;
    const posts = Array.from({ length: 5 }, (_, i) =>
      httpPost({ url: new URL(receiver.url), headers: {}, body: String(i), signal: never(), agent, maxResponseBytes: 1024 }),
    );
    await waitFor(() => receiver.held.length === 2, { timeoutMs: 5_000, message: 'two requests held' });
    receiver.hold = false;
    receiver.release();
    const answers = await Promise.all(posts);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(receiver.maxHeld()).toBe(2);
    expect(receiver.connections()).toBe(2);
    expect(receiver.requests).toHaveLength(5);
  });

  it('a POST waiting for a connection settles as soon as its signal aborts, and is never sent', async () => {
    const { receiver, agent } = await setup({ connectionsPerOrigin: 1 });
    receiver.hold = true;
    const first = httpPost({ url: new URL(receiver.url), headers: {}, body: 'first', signal: never(), agent, maxResponseBytes: 1024 });
    await waitFor(() => receiver.held.length === 1, { timeoutMs: 5_000, message: 'the first request held' });
    const waiting = new AbortController();
    const second = httpPost({
      url: new URL(receiver.url),
      headers: {},
      body: 'second',
      signal: waiting.signal,
      agent,
      maxResponseBytes: 1024,
    });
    waiting.abort();
    await expect(second).rejects.toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' });
    receiver.hold = false;
    receiver.release();
    expect((await first).status).toBe(200);
    const third = await httpPost({
      url: new URL(receiver.url),
      headers: {},
      body: 'third',
      signal: never(),
      agent,
      maxResponseBytes: 1024,
    });
    expect(third.status).toBe(200);
    expect(receiver.requests.map((r) => r.body.toString())).toEqual(['first', 'third']);
    expect(receiver.connections()).toBe(1);
  });

  it('timeoutMs ends a held request with HttpTimeoutError and drops its connection; one waiting for a connection is never sent', async () => {
    const { receiver, agent } = await setup({ connectionsPerOrigin: 1 });
    receiver.hold = true;
    const post = (body: string, timeoutMs: number) =>
      httpPost({ url: new URL(receiver.url), headers: {}, body, signal: never(), timeoutMs, agent, maxResponseBytes: 1024 });
    const first = post('first', 300);
    await waitFor(() => receiver.held.length === 1, { timeoutMs: 5_000, message: 'the first request held' });
    // The only connection is busy: the second waits for it and times out first.
    const second = post('second', 50);
    await expect(second).rejects.toBeInstanceOf(HttpTimeoutError);
    await expect(second).rejects.toMatchObject({ name: 'TimeoutError', message: 'the request timed out after 50 ms' });
    await expect(first).rejects.toBeInstanceOf(HttpTimeoutError);
    receiver.hold = false;
    receiver.release();
    // The timed-out request's connection was destroyed; the next POST opens another and is answered.
    expect((await post('third', 5_000)).status).toBe(200);
    expect(receiver.requests.map((r) => r.body.toString())).toEqual(['first', 'third']);
  });

  it('a request answered within timeoutMs resolves, and its timer fires nothing later', async () => {
    const { receiver, agent } = await setup();
    const res = await httpPost({
      url: new URL(receiver.url),
      headers: {},
      body: 'x',
      signal: never(),
      timeoutMs: 100,
      agent,
      maxResponseBytes: 1024,
    });
    expect(res.status).toBe(200);
    // Past its timeout the connection is still open and reused: the timer did not abort it.
    await new Promise((r) => setTimeout(r, 150));
    expect(
      (await httpPost({ url: new URL(receiver.url), headers: {}, body: 'y', signal: never(), agent, maxResponseBytes: 1024 })).status,
    ).toBe(200);
    expect(receiver.connections()).toBe(1);
  });

  it('an already aborted signal sends nothing', async () => {
    const { receiver, agent } = await setup();
    const signal = AbortSignal.abort();
    await expect(
      httpPost({ url: new URL(receiver.url), headers: {}, body: 'x', signal, agent, maxResponseBytes: 1024 }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
    expect(receiver.connections()).toBe(0);
  });

  it('resolves a new connection with the agent lookup once, and reuses it only for that origin', async () => {
    const names: string[] = [];
    const lookup: LookupFunction = (hostname, options, callback) => {
      names.push(hostname);
      if (options.all)
        (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    };
    const { receiver, agent } = await setup({ connectionsPerOrigin: 1, lookup });
    for (const path of ['/a', '/b']) {
      await httpPost({
        url: new URL(`http://receiver.test:${receiver.port}${path}`),
        headers: {},
        body: '',
        signal: never(),
        agent,
        maxResponseBytes: 64,
      });
    }
    await httpPost({
      url: new URL(`http://other.test:${receiver.port}/c`),
      headers: {},
      body: '',
      signal: never(),
      agent,
      maxResponseBytes: 64,
    });
    expect(names).toEqual(['receiver.test', 'other.test']);
    expect(receiver.requests.map((r) => [r.headers.host, r.connection])).toEqual([
      [`receiver.test:${receiver.port}`, 1],
      [`receiver.test:${receiver.port}`, 1],
      [`other.test:${receiver.port}`, 2],
    ]);
  });

  it('a lookup error fails the POST with that error', async () => {
    const lookup: LookupFunction = (_hostname, _options, callback) =>
      callback(Object.assign(new Error('refused by policy'), { code: 'ETARGETREFUSED' }), '', 4);
    const { receiver, agent } = await setup({ lookup });
    await expect(
      httpPost({
        url: new URL(`http://receiver.test:${receiver.port}/`),
        headers: {},
        body: '',
        signal: never(),
        agent,
        maxResponseBytes: 64,
      }),
    ).rejects.toMatchObject({ code: 'ETARGETREFUSED', message: 'refused by policy' });
    expect(receiver.connections()).toBe(0);
  });

  it('keeps maxResponseBytes of a longer answer and drops that connection; the next POST goes over another', async () => {
    const served: Socket[] = [];
    const server = http.createServer((req, res) => {
      served.push(req.socket);
      res.writeHead(200).end('x'.repeat(10_000));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const agent = createHttpAgent({ connectionsPerOrigin: 1 });
    cleanups.push(() => agent.destroy());
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const first = await httpPost({ url, headers: {}, body: '', signal: never(), agent, maxResponseBytes: 100 });
    expect(first).toMatchObject({ status: 200, truncated: true });
    expect(first.body.toString()).toBe('x'.repeat(100));
    await waitFor(() => served[0]!.destroyed, { timeoutMs: 5_000, message: 'the cut-off connection to close' });
    const second = await httpPost({ url, headers: {}, body: '', signal: never(), agent, maxResponseBytes: 100_000 });
    expect(second).toMatchObject({ status: 200, truncated: false });
    expect(second.body).toHaveLength(10_000);
    expect(served).toHaveLength(2);
    expect(served[1]).not.toBe(served[0]);
  });

  it('maps the receiver closing the connection without an answer to ECONNRESET, as node:http did', async () => {
    const server = http.createServer((req) => req.socket.destroy());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const agent = createHttpAgent({ connectionsPerOrigin: 1 });
    cleanups.push(() => agent.destroy());
    const url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    await expect(httpPost({ url, headers: {}, body: 'x', signal: never(), agent, maxResponseBytes: 64 })).rejects.toMatchObject({
      code: 'ECONNRESET',
      cause: { code: 'UND_ERR_SOCKET' },
    });
  });

  it('resolves with the status once it arrived, truncated, when the body is then cut off or still arriving at the timeout or abort', async () => {
    const receiver = await startHttpReceiver();
    cleanups.push(() => receiver.close());
    const agent = createHttpAgent({ connectionsPerOrigin: 2 });
    cleanups.push(() => agent.destroy());
    const url = new URL(receiver.url);
    receiver.script(
      { status: 200, headers: { 'x-a': '1' }, body: 'acc', bodyEnd: 'reset' },
      { status: 200, body: 'slow', bodyEnd: 'never' },
      { status: 503, headers: { 'retry-after': '5' }, body: 'slow', bodyEnd: 'never' },
    );
    const post = (signal: AbortSignal, timeoutMs?: number) =>
      httpPost({ url, headers: {}, body: 'x', signal, agent, maxResponseBytes: 64, ...(timeoutMs ? { timeoutMs } : {}) });
    expect(await post(never())).toMatchObject({ status: 200, headers: { 'x-a': '1' }, truncated: true });
    expect(await post(never(), 100)).toMatchObject({ status: 200, truncated: true });
    expect(await post(AbortSignal.timeout(100))).toMatchObject({ status: 503, headers: { 'retry-after': '5' }, truncated: true });
    // The trickling answers' connections are dropped, not left to trickle.
    await waitFor(() => receiver.open === 0, { timeoutMs: 5_000, message: 'the trickling answers to be cut off' });
    // Before the status, the same failures still reject.
    receiver.script('reset', 'hang');
    await expect(post(never())).rejects.toMatchObject({ code: 'ECONNRESET' });
    await expect(post(never(), 100)).rejects.toBeInstanceOf(HttpTimeoutError);
  });

  it('https: verifies the certificate (a self-signed receiver is refused before any request) and sends SNI for a name', async () => {
    const servernames: string[] = [];
    let requests = 0;
    const server = https.createServer(
      {
        key: SELF_SIGNED_KEY,
        cert: SELF_SIGNED_CERT,
        // Called only when the client sends SNI.
        SNICallback: (servername, cb) => {
          servernames.push(servername);
          cb(null, undefined);
        },
      },
      (_req, res) => {
        requests++;
        res.end();
      },
    );
    server.on('tlsClientError', () => {});
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const port = (server.address() as AddressInfo).port;
    const lookup: LookupFunction = (_hostname, options, callback) => {
      if (options.all)
        (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [{ address: '127.0.0.1', family: 4 }]);
      else callback(null, '127.0.0.1', 4);
    };
    const agent = createHttpAgent({ connectionsPerOrigin: 1, lookup });
    cleanups.push(() => agent.destroy());
    await expect(
      httpPost({ url: new URL(`https://127.0.0.1:${port}/`), headers: {}, body: 'x', signal: never(), agent, maxResponseBytes: 64 }),
    ).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    await expect(
      httpPost({ url: new URL(`https://receiver.test:${port}/`), headers: {}, body: 'x', signal: never(), agent, maxResponseBytes: 64 }),
    ).rejects.toMatchObject({ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' });
    expect(requests).toBe(0);
    expect(servernames).toEqual(['receiver.test']);
  });
});
