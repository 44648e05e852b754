import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One delivery as the receiver saw it; `at` is the wall-clock arrival (ms since epoch). */
interface Received {
  readonly path: string;
  readonly id: string;
  readonly attempt: number;
  readonly body: string;
  readonly at: number;
  readonly status: number;
}

/** How the receiver answers: a status (and headers), after an optional wait the test controls. */
export interface Answer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
}

/** A real local HTTP server standing in for a customer's webhook endpoint. */
export interface Receiver {
  readonly url: string;
  readonly received: Received[];
  /** Requests being answered right now, and the most ever at once. */
  readonly open: number;
  readonly maxOpen: number;
  close(): Promise<void>;
}

/**
 * Starts a receiver on 127.0.0.1. `answer` decides each response from the request (it may await a
 * gate to hold the request open). The body the dispatcher's test provider sends is JSON
 * `{ id, attempt, body }`.
 */
export async function startReceiver(
  answer: (r: { path: string; id: string; attempt: number; body: string }) => Answer | Promise<Answer>,
): Promise<Receiver> {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  let open = 0;
  let maxOpen = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      open++;
      maxOpen = Math.max(maxOpen, open);
      const payload = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string; attempt: number; body: string };
      const request = { path: req.url ?? '', id: payload.id, attempt: payload.attempt, body: payload.body };
      void Promise.resolve(answer(request)).then(
        (a) => {
          open--;
          received.push({ ...request, at, status: a.status });
          res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers }).end(String(a.status));
        },
        () => {
          open--;
          res.destroy();
        },
      );
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    get open() {
      return open;
    },
    get maxOpen() {
      return maxOpen;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** A promise the test opens by hand, to hold requests until it says so. */
export function gate(): { readonly promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}
