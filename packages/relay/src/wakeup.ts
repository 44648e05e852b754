import pg from 'pg';
import { backoffDelayMs } from '@notify/runtime';

/** The channel the outbox insert trigger notifies (migration 0002). */
export const OUTBOX_CHANNEL = 'notify_outbox';

/** Options of `createWakeup`. */
export interface WakeupOptions {
  readonly connectionString: string;
  readonly channel?: string;
  /** A notification arrived. */
  readonly onNotify: () => void;
  /** The connection is (again) listening; notifications sent while it was down are lost, so look for work. */
  readonly onConnected: (reconnect: boolean) => void;
  /** The connection failed or was lost; it is retried with backoff. */
  readonly onError: (error: unknown) => void;
  /** Reconnect backoff. Defaults 250 ms doubling to 10 s. */
  readonly reconnect?: { readonly baseMs: number; readonly maxMs: number };
}

/** A LISTEN connection that reconnects by itself. */
export interface Wakeup {
  /** Connects; a failure is reported through `onError` and retried, never thrown. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A dedicated `pg` client (not from a pool: LISTEN belongs to one session) running
 * `LISTEN notify_outbox`. Lost connections (server restart, pg_terminate_backend, network) are
 * replaced with exponential backoff; TCP keepalive detects dead peers.
 */
export function createWakeup(options: WakeupOptions): Wakeup {
  const channel = options.channel ?? OUTBOX_CHANNEL;
  const reconnect = options.reconnect ?? { baseMs: 250, maxMs: 10_000 };
  let client: pg.Client | null = null;
  let stopped = false;
  let everConnected = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | null = null;

  const lost = (c: pg.Client, err: unknown) => {
    if (client !== c) return;
    client = null;
    c.end().catch(() => {});
    if (stopped) return;
    options.onError(err);
    schedule();
  };

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: options.connectionString, application_name: 'notify-relay-wakeup', keepAlive: true });
    c.on('error', (err) => lost(c, err));
    c.on('end', () => lost(c, new Error('LISTEN connection ended')));
    c.on('notification', (msg) => {
      if (msg.channel === channel) options.onNotify();
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    } catch (err) {
      c.end().catch(() => {});
      throw err;
    }
    if (stopped) {
      await c.end().catch(() => {});
      return;
    }
    client = c;
    attempt = 0;
    options.onConnected(everConnected);
    everConnected = true;
  };

  const schedule = () => {
    if (stopped || timer) return;
    attempt++;
    const delay = backoffDelayMs({ attempt, baseMs: reconnect.baseMs, maxMs: reconnect.maxMs, jitter: 0.2, random: Math.random });
    timer = setTimeout(() => {
      timer = null;
      connect().catch((err: unknown) => {
        if (stopped) return;
        options.onError(err);
        schedule();
      });
    }, delay);
  };

  return {
    async start() {
      try {
        await connect();
      } catch (err) {
        options.onError(err);
        schedule();
      }
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      const c = client;
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
