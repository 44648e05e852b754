import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { NoContentServerResponse } from './no-content-response.js';

/** One request over real HTTP: the status and the raw header names, lower-cased. */
const request = (url: string, method: string) =>
  new Promise<{ status: number; headers: string[] }>((resolve, reject) => {
    const req = http.request(url, { method, agent: false }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.rawHeaders.filter((_, i) => i % 2 === 0).map((h) => h.toLowerCase()) }),
      );
    });
    req.on('error', reject);
    req.end();
  });

async function withServer(server: http.Server, fn: (url: string) => Promise<void>): Promise<void> {
  await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
  try {
    await fn(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    await new Promise((r) => server.close(r));
  }
}

describe('NoContentServerResponse', () => {
  // @hono/node-server writes every head as writeHead(status, headers) with the headers as an
  // object, Content-Type always among them (packages/cli/test/no-content-type.test.ts: through notify start).
  it('writes a 204 or 304 without Content-Type however Node is given the head; other answers keep theirs', async () => {
    const server = http.createServer({ ServerResponse: NoContentServerResponse }, (req, res) => {
      if (req.url === '/object') {
        res.writeHead(204, { 'content-type': 'text/plain; charset=UTF-8', 'x-request-id': 'req_1' }).end();
      } else if (req.url === '/set') {
        res.statusCode = 204;
        res.setHeader('Content-Type', 'text/plain');
        res.end();
      } else if (req.url === '/message') {
        res.writeHead(204, 'No Content', { 'Content-Type': 'text/plain', 'X-Kept': '1' }).end();
      } else if (req.url === '/list') {
        res.writeHead(304, ['Content-Type', 'text/plain', 'ETag', '"1"']).end();
      } else {
        res.writeHead(200, { 'Content-Type': 'text/plain' }).end('ok');
      }
    });
    server.listen(0, '127.0.0.1');
    await withServer(server, async (url) => {
      const object = await request(`${url}/object`, 'DELETE');
      expect(object).toMatchObject({ status: 204, headers: expect.arrayContaining(['x-request-id']) });
      expect(object.headers).not.toContain('content-type');
      expect(await request(`${url}/set`, 'GET')).toMatchObject({ status: 204, headers: expect.not.arrayContaining(['content-type']) });
      expect(await request(`${url}/message`, 'GET')).toMatchObject({ status: 204, headers: expect.arrayContaining(['x-kept']) });
      expect((await request(`${url}/message`, 'GET')).headers).not.toContain('content-type');
      expect(await request(`${url}/list`, 'GET')).toMatchObject({ status: 304, headers: expect.arrayContaining(['etag']) });
      expect((await request(`${url}/list`, 'GET')).headers).not.toContain('content-type');
      expect(await request(`${url}/other`, 'GET')).toMatchObject({ status: 200, headers: expect.arrayContaining(['content-type']) });
    });
  });
});
