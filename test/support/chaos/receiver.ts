import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { ReceivedDelivery } from './audit.js';

/**
 * How the receiver treats one request:
 * - `ok`: answer 200 at once (accepted);
 * - `status`: answer that status (accepted only for 2xx);
 * - `slow`: accept, answer 200 after `delayMs` — past the sender's timeout this is the classic
 *   "processed, but the sender never heard": the sender retries and the receiver sees a duplicate;
 * - `hang`: read the request and never answer (not accepted; held until the sender gives up);
 * - `reset`: read the request and destroy the connection (not accepted; the sender sees ECONNRESET).
 */
export type ReceiverBehaviour =
  | { readonly kind: 'ok' }
  | { readonly kind: 'status'; readonly status: number }
  | { readonly kind: 'slow'; readonly delayMs: number }
  | { readonly kind: 'hang' }
  | { readonly kind: 'reset' };

/** What `behaviour` is told about a request. */
export interface ReceiverRequest {
  /** `webhook-id`: the notification id. */
  readonly webhookId: string;
  /** How many requests with this `webhook-id` arrived before this one. */
  readonly seen: number;
  readonly path: string;
}

/** A local webhook receiver that logs every request and answers as a scenario scripts it. */
export interface ChaosReceiver {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Every request that carried a `webhook-id`, in arrival order. */
  readonly deliveries: readonly ReceivedDelivery[];
  /** Distinct `webhook-id`s accepted so far. */
  readonly acceptedIds: ReadonlySet<string>;
  /** Requests without a `webhook-id` (must stay 0: every delivery is signed and identified). */
  readonly anonymous: number;
  /** Requests being held (hang, or slow and not yet answered). */
  readonly open: number;
  /** Changes the behaviour for requests from now on. */
  setBehaviour(behaviour: (req: ReceiverRequest) => ReceiverBehaviour): void;
  close(): Promise<void>;
}

/** Starts a chaos receiver on 127.0.0.1 and an ephemeral port. The default behaviour is `ok`. */
export async function startChaosReceiver(
  behaviour: (req: ReceiverRequest) => ReceiverBehaviour = () => ({ kind: 'ok' }),
): Promise<ChaosReceiver> {
  let decide = behaviour;
  const deliveries: ReceivedDelivery[] = [];
  const acceptedIds = new Set<string>();
  const seen = new Map<string, number>();
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let anonymous = 0;
  let open = 0;

  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const header = req.headers['webhook-id'];
      const webhookId = Array.isArray(header) ? header[0] : header;
      if (!webhookId) {
        anonymous++;
        res.writeHead(400).end();
        return;
      }
      const count = seen.get(webhookId) ?? 0;
      seen.set(webhookId, count + 1);
      const b = decide({ webhookId, seen: count, path: req.url ?? '' });
      const accepted = b.kind === 'ok' || b.kind === 'slow' || (b.kind === 'status' && b.status >= 200 && b.status < 300);
      deliveries.push({ webhookId, accepted, at: new Date() });
      if (accepted) acceptedIds.add(webhookId);
      switch (b.kind) {
        case 'ok':
          res.writeHead(200).end();
          return;
        case 'status':
          res.writeHead(b.status).end();
          return;
        case 'reset':
          req.socket.destroy();
          return;
        case 'hang':
          open++;
          res.on('close', () => open--);
          return;
        case 'slow': {
          open++;
          res.on('close', () => open--);
          const t = setTimeout(() => {
            timers.delete(t);
            if (!res.destroyed) res.writeHead(200).end();
          }, b.delayMs);
          timers.add(t);
          return;
        }
      }
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  let closed = false;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    deliveries,
    acceptedIds,
    get anonymous() {
      return anonymous;
    },
    get open() {
      return open;
    },
    setBehaviour(next) {
      decide = next;
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const t of timers) clearTimeout(t);
      const done = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await done;
    },
  };
}
