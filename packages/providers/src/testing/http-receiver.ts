import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request as the receiver saw it. */
export interface ReceivedRequest {
  readonly method: string;
  /** Path and query. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  /** The raw body, exactly as sent (verify signatures over this). */
  readonly body: string;
  readonly remoteAddress: string;
  /** When its body had arrived (ms since the epoch, the receiver's own clock). */
  readonly receivedAt: number;
  /** How the receiver answered it. */
  readonly answer: ScriptedResponse;
}

/**
 * How the receiver answers one request:
 * - `{ status, headers?, body? }`: that answer; with `bodyEnd: 'reset'` the connection is destroyed
 *   after the status, headers and `body`, and with `bodyEnd: 'never'` the body never ends (until
 *   the client hangs up): an answer cut off, or trickling in, after its status;
 * - `'hang'`: read the request, never answer (until `close()`);
 * - `'reset'`: destroy the connection without an answer (the client sees ECONNRESET);
 * - `'endless'`: answer 200 and stream a body that never ends (until the client hangs up).
 */
export type ScriptedResponse =
  | {
      readonly status: number;
      readonly headers?: Readonly<Record<string, string>>;
      readonly body?: string;
      readonly bodyEnd?: 'reset' | 'never';
    }
  | 'hang'
  | 'reset'
  | 'endless';

/** A real local HTTP server with scripted answers: a webhook receiver or an SMS gateway in tests. */
export interface HttpReceiver {
  /** `http://<host>:<port>` */
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Every request received (a 'hang' or 'reset' one included), in arrival order. */
  readonly requests: ReceivedRequest[];
  /** Queues answers for the next requests, in order; after them, the default answer. */
  script(...responses: ScriptedResponse[]): void;
  /** Changes the default answer (initially 200 `{"ok":true}`). */
  setDefault(response: ScriptedResponse): void;
  /** Requests being held by 'hang' or 'endless' right now. */
  readonly open: number;
  /** Stops listening and destroys every connection. Idempotent. */
  close(): Promise<void>;
}

/** Options of `startHttpReceiver`. */
export interface HttpReceiverOptions {
  /** Default 127.0.0.1. Linux routes all of 127.0.0.0/8 to loopback, so 127.0.0.2 gives a second "host". */
  readonly host?: string;
  readonly port?: number;
  readonly defaultResponse?: ScriptedResponse;
}

/** Starts a scripted HTTP receiver on an ephemeral port. */
export async function startHttpReceiver(options: HttpReceiverOptions = {}): Promise<HttpReceiver> {
  const host = options.host ?? '127.0.0.1';
  const requests: ReceivedRequest[] = [];
  const queue: ScriptedResponse[] = [];
  let fallback: ScriptedResponse = options.defaultResponse ?? {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: '{"ok":true}',
  };
  const sockets = new Set<Socket>();
  let open = 0;
  let closed = false;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = queue.length > 0 ? queue.shift()! : fallback;
      requests.push({
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        remoteAddress: req.socket.remoteAddress ?? '',
        receivedAt: Date.now(),
        answer,
      });
      // An answer left open counts until the client hangs up (or close() ends it).
      const holdOpen = () => {
        open++;
        res.on('close', () => open--);
      };
      if (answer === 'hang') {
        holdOpen();
        return;
      }
      if (answer === 'reset') {
        req.socket.destroy();
        return;
      }
      if (answer === 'endless') {
        holdOpen();
        res.writeHead(200, { 'content-type': 'text/plain' });
        const chunk = Buffer.alloc(16 * 1024, 'x');
        const pump = () => {
          while (!res.destroyed && res.write(chunk)) {
            /* fill the socket buffer */
          }
          if (!res.destroyed) res.once('drain', pump);
        };
        pump();
        return;
      }
      res.writeHead(answer.status, answer.headers ?? {});
      if (answer.bodyEnd === 'reset') {
        // Flush what was written, then cut the connection mid-body.
        res.write(answer.body ?? '', () => req.socket.destroy());
        return;
      }
      if (answer.bodyEnd === 'never') {
        holdOpen();
        res.write(answer.body ?? '');
        return;
      }
      res.end(answer.body ?? '');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    host,
    port,
    requests,
    script: (...responses) => {
      queue.push(...responses);
    },
    setDefault: (response) => {
      fallback = response;
    },
    get open() {
      return open;
    },
    close: async () => {
      if (closed) return;
      closed = true;
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await done;
    },
  };
}
