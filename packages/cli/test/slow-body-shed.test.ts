import net from 'node:net';
import type { AddressInfo } from 'node:net';
import type { IncomingMessage } from 'node:http';
import { serve } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp, generateApiKey, hashApiKey } from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';
import { lockApiKeys } from '../../../test/support/api-key-lock.js';
import { UNKNOWN_NOTIFICATION as UNKNOWN, createSheddingApp } from '../../../test/support/shedding-app.js';

// NOTIFY_API_MAX_IN_FLIGHT against clients that stall in the middle of their body, on the Node
// server `notify start` uses (@hono/node-server, so the body arrives as the client sends it).
// Found by the security audit: 64 connections of one tenant, each with one byte of a body, held
// every slot, and every tenant's requests were answered 503 `overloaded` until the request deadline.
let t: TestDatabase;
let key = '';

beforeAll(async () => {
  t = await createTestDatabase();
  const k = generateApiKey();
  await t.pool.query('INSERT INTO api_keys (id, tenant_id, key_hash, name, created_at) VALUES ($1, $2, $3, $4, now())', [
    k.id,
    'acme',
    hashApiKey(k.key),
    'acme',
  ]);
  key = k.key;
});
afterAll(async () => {
  await t.close();
});

describe('maxInFlight and clients that send their body slowly', () => {
  it('a request waiting for the rest of its body holds no slot: stalled senders do not shed the others', async () => {
    const { app, reasons } = createSheddingApp(t.db, { maxInFlight: 2 });
    // `reading` counts requests whose body the app has started to read (a 'data' listener on the Node request).
    let reading = 0;
    const server = serve({
      fetch: (req, env: { incoming: unknown }) => {
        (env.incoming as IncomingMessage).on('newListener', (event) => {
          if (event === 'data') reading++;
        });
        return app.fetch(req, env);
      },
      port: 0,
      hostname: '127.0.0.1',
    });
    await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const get = () => fetch(`${base}${UNKNOWN}`, { headers: { authorization: `Bearer ${key}` } });
    const body = JSON.stringify({ channel: 'webhook', to: 'https://hooks.example.com/slow', body: 'slow' });
    // As many stalled senders as there are slots: the headers and one byte of the body, then nothing.
    const stalled = [0, 1].map(() => {
      const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
      socket.write(
        `POST /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, 1)}`,
      );
      const answer = new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('close', () => resolve(text));
      });
      return { socket, answer };
    });
    try {
      await waitFor(() => reading === 2, { message: 'both stalled requests reading their bodies' });
      expect((await get()).status).toBe(404);
      expect(reasons).toEqual([]);
      // The stalled senders finish: they take a slot again and are served.
      for (const s of stalled) s.socket.write(body.slice(1));
      const answers = await Promise.all(stalled.map((s) => s.answer));
      expect(answers.map((a) => a.split('\r\n')[0])).toEqual(['HTTP/1.1 202 Accepted', 'HTTP/1.1 202 Accepted']);
      // The count is back where it was: two requests in progress pass, a third is shed.
      const lock = await lockApiKeys(t.url);
      try {
        const held = [get(), get()];
        await lock.waiters(2, 'two requests waiting on the lock');
        expect((await get()).status).toBe(503);
        await lock.release();
        expect((await Promise.all(held)).map((r) => r.status)).toEqual([404, 404]);
      } finally {
        await lock.end();
      }
    } finally {
      for (const s of stalled) s.socket.destroy();
      await new Promise((r) => server.close(r));
    }
  });

  it('a body still arriving at the request deadline is answered 408 request_timeout, not 503 database_unreachable', async () => {
    const app = createApp({ db: t.db, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } }, requestDeadlineMs: 300 });
    const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
    await new Promise<void>((r) => (server.listening ? r() : server.once('listening', () => r())));
    const socket = net.connect((server.address() as AddressInfo).port, '127.0.0.1');
    try {
      socket.write(
        `POST /v1/notifications HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
          'Content-Length: 100\r\nConnection: close\r\n\r\n{',
      );
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (d: Buffer) => {
          text += d.toString();
          if (text.includes('}')) resolve(text);
        });
        socket.on('close', () => resolve(text));
      });
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 408 Request Timeout');
      expect(answer).toContain('"type":"https://notify.dev/problems/request_timeout"');
      expect(answer.toLowerCase()).not.toContain('retry-after');
    } finally {
      socket.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
