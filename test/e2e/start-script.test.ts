/**
 * The README's start command as a supervisor runs it: `bash scripts/start.sh`, then SIGTERM to
 * exactly the PID it started (what systemd, Docker or a PaaS does). The script `exec`s the compiled
 * service, so that PID is the service itself: the signal starts its graceful shutdown, the delivery
 * in flight finishes and is recorded, and no process of the service outlives it. The start is also
 * clean: a newcomer sees no error-level line for normal events.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { ROOT } from '../support/notify-process.js';
import { fetchPastShedding } from '../support/http.js';
import { waitFor } from '../support/wait.js';

const KEY = 'start-script-key-0123456789';
const SHUTDOWN_TIMEOUT_MS = 10_000;
const RECEIVER_DELAY_MS = 1_500;

let t: TestDatabase;
let kafka: TestKafka;
let receiver: Server;
let hookUrl: string;
let child: ChildProcess | undefined;
let output = '';
const requests: { startedAt: number; finishedAt?: number }[] = [];

/** PIDs of live processes whose environment carries this run's topic prefix: the service's processes. */
function servicePids(prefix: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`NOTIFY_TOPIC_PREFIX=${prefix}`)) pids.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

beforeAll(async () => {
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  // A slow receiver: each delivery is still in flight for RECEIVER_DELAY_MS.
  receiver = createServer((req, res) => {
    const r: (typeof requests)[number] = { startedAt: Date.now() };
    requests.push(r);
    req.resume();
    setTimeout(() => {
      r.finishedAt = Date.now();
      res.writeHead(200).end('ok');
    }, RECEIVER_DELAY_MS);
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  receiver?.closeAllConnections();
  await new Promise<void>((r) => receiver?.close(() => r()));
  await kafka?.close();
  await t?.close();
});

describe('bash scripts/start.sh under a supervisor', () => {
  it('leaves the service itself as the PID it started: SIGTERM finishes the delivery in flight and ends every process', async () => {
    child = spawn('bash', ['scripts/start.sh'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        DATABASE_URL: t.url,
        KAFKA_BROKERS: kafka.brokers.join(','),
        NOTIFY_TOPIC_PREFIX: kafka.prefix,
        NOTIFY_TOPIC_PARTITIONS: '2',
        PORT: '0',
        NOTIFY_ADMIN_PORT: '0',
        NOTIFY_API_KEYS: `acme:${KEY}`,
        NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
        NOTIFY_RELAY_POLL_MS: '100',
        NOTIFY_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
        LOG_LEVEL: 'info',
      },
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
      child!.on('exit', (code, signal) => resolve({ code, signal, at: Date.now() })),
    );
    const url = await waitFor(() => /listening on (http:\/\/\S+)/.exec(output)?.[1], {
      timeoutMs: 180_000,
      intervalMs: 100,
      message: `start.sh to print where it listens\n${output.slice(-3000)}`,
    });

    // The PID the supervisor holds is the compiled service, not a shell or pnpm in front of it.
    expect(readlinkSync(`/proc/${child.pid}/exe`)).toBe(realpathSync(process.execPath));
    const cmdline = readFileSync(`/proc/${child.pid}/cmdline`, 'utf8').split('\0');
    expect(cmdline.slice(1, 3)).toEqual(['packages/cli/dist/bin/notify.js', 'start']);
    expect(servicePids(kafka.prefix)).toEqual([child.pid]);

    const res = await fetchPastShedding(`${url}/v1/notifications`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ channel: 'webhook', to: hookUrl, body: 'in flight at shutdown' }),
    });
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    await waitFor(() => requests.length === 1, { timeoutMs: 30_000, message: 'the delivery to reach the receiver' });

    const signalledAt = Date.now();
    process.kill(child.pid!, 'SIGTERM');
    const exit = await exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(exit.at - signalledAt).toBeLessThan(SHUTDOWN_TIMEOUT_MS);
    // The delivery that was in flight finished (the receiver answered) and was recorded as sent.
    expect(requests[0]!.finishedAt).toBeDefined();
    const row = await t.db.selectFrom('notifications').select(['state', 'attempts']).where('id', '=', id).executeTakeFirstOrThrow();
    expect(row).toEqual({ state: 'sent', attempts: 1 });
    expect(servicePids(kafka.prefix)).toEqual([]);

    // A clean start and stop: no error-level line (pino level 50 and above) for normal events.
    const errors = output.split('\n').filter((line) => /"level":(5\d|60)\b/.test(line));
    expect(errors).toEqual([]);
  }, 240_000);
});
