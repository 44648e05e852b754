import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Options of `startReceiver`. */
export interface ReceiverOptions {
  /** Fraction of requests answered 503 (a transient failure), drawn independently per request. */
  readonly failureRate?: number;
  /** Random source for the failure draw (default Math.random). */
  readonly random?: () => number;
}

/** A local no-op HTTP endpoint that records when each notification first arrived. */
export interface Receiver {
  readonly url: string;
  /** Requests received, failed ones included. */
  requests(): number;
  /** Requests answered 2xx. */
  delivered(): number;
  /** performance.now() of the first successful arrival of each payload id. */
  readonly firstDelivered: ReadonlyMap<string, number>;
  /** performance.now() of the first request of any outcome, or undefined. */
  firstRequestAt(): number | undefined;
  /** Forgets every arrival (between phases). */
  reset(): void;
  /** Changes the share of requests answered 503 from now on. */
  setFailureRate(rate: number): void;
  close(): Promise<void>;
}

/**
 * Starts the receiver on 127.0.0.1 (an ephemeral port). It accepts any POST with a JSON body that
 * has an `id` (our webhook payload; the pg-boss worker sends the same shape), answers 200 `{}`, or
 * 503 for a `failureRate` share of requests. Keep-alive, like a real endpoint.
 */
export async function startReceiver(options: ReceiverOptions = {}): Promise<Receiver> {
  let failureRate = options.failureRate ?? 0;
  const random = options.random ?? Math.random;
  const firstDelivered = new Map<string, number>();
  let requests = 0;
  let delivered = 0;
  let firstRequest: number | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      requests++;
      firstRequest ??= at;
      if (failureRate > 0 && random() < failureRate) {
        res.writeHead(503, { 'content-type': 'application/json', 'content-length': '2' }).end('{}');
        return;
      }
      let id: unknown;
      try {
        id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown }).id;
      } catch {
        id = undefined;
      }
      if (typeof id === 'string' && !firstDelivered.has(id)) firstDelivered.set(id, at);
      delivered++;
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '2' }).end('{}');
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    requests: () => requests,
    delivered: () => delivered,
    firstDelivered,
    firstRequestAt: () => firstRequest,
    setFailureRate(rate: number) {
      failureRate = rate;
    },
    reset() {
      firstDelivered.clear();
      requests = 0;
      delivered = 0;
      firstRequest = undefined;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
