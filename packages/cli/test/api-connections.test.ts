import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { type NotifyServer, startNotifyProcess } from '../../../test/support/notify-process.js';
import { waitFor } from '../../../test/support/wait.js';

// NOTIFY_API_MAX_CONNECTIONS on the compiled `notify start --roles api`, with raw sockets: idle
// connections that send nothing, as a client holding sockets open does.
vi.setConfig({ testTimeout: 120_000 });

const CAP = 3;
let t: TestDatabase;
let notify: NotifyServer | undefined;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await notify?.stop();
  await t?.close();
});

/** A socket to `url`'s port, open once connected; `closed` and `received` say what the server did with it. */
async function connect(url: string): Promise<{ socket: net.Socket; closed: () => boolean; received: () => string }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  let closed = false;
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  socket.on('error', () => {}); // a dropped socket may be reset; 'close' follows and is what the test reads
  socket.on('close', () => (closed = true));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('close', () => reject(new Error('closed before it connected')));
  });
  return { socket, closed: () => closed, received: () => received };
}

/** GET `url` on a new connection (no agent, so no pooled socket): its status, or the error's code. */
const get = (url: string) =>
  new Promise<number | string>((resolve) => {
    const req = http.get(url, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    });
    req.setTimeout(5_000, () => req.destroy(new Error('no answer in 5 s')));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });

describe('NOTIFY_API_MAX_CONNECTIONS', () => {
  it(`with a cap of ${CAP}: the next connection is closed, counted and logged; once one closes, a request is served`, async () => {
    notify = await startNotifyProcess(['--roles', 'api'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: '127.0.0.1:1',
      PORT: '0',
      NOTIFY_API_MAX_CONNECTIONS: String(CAP),
    });
    const n = notify;
    // One after the other: the server accepts in the order the kernel queued them, so the held ones come first.
    const held: Awaited<ReturnType<typeof connect>>[] = [];
    for (let i = 0; i < CAP; i++) held.push(await connect(n.url));
    const extra = await connect(n.url);
    try {
      await waitFor(() => extra.closed(), { message: `the server to close connection ${CAP + 1}` });
      expect(extra.received()).toBe('');
      expect(held.map((h) => h.closed())).toEqual(Array.from({ length: CAP }, () => false));

      const metrics = await (await fetch(`${n.adminUrl}/metrics`)).text();
      expect(metrics).toMatch(/^notify_api_connections_dropped_total 1$/m);
      const warned = await waitFor(
        () => {
          const lines = n
            .output()
            .split('\n')
            .filter((l) => l.includes('new connection'));
          return lines.length > 0 ? lines.map((l) => JSON.parse(l) as Record<string, unknown>) : undefined;
        },
        { message: 'the warning about the dropped connection' },
      );
      expect(warned).toEqual([
        expect.objectContaining({
          level: 'warn',
          role: 'api',
          dropped: 1,
          max_connections: CAP,
          msg: `dropped 1 new connection at the cap of NOTIFY_API_MAX_CONNECTIONS=${CAP} open connections`,
        }),
      ]);

      // One held client leaves: the server sees it close (not at once: it reads the FIN first), then serves a new one.
      held[0]!.socket.destroy();
      await waitFor(async () => (await get(`${n.url}/openapi.json`)) === 200, { message: 'a request served once a connection closed' });
      expect(held.slice(1).map((h) => h.closed())).toEqual(Array.from({ length: CAP - 1 }, () => false));
    } finally {
      for (const h of [...held, extra]) h.socket.destroy();
    }
  });
});
