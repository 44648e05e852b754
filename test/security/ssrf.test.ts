/**
 * SSRF, end to end: hostile webhook targets POSTed to the API of a running `notify start` (every
 * role, one process) whose allow-list admits only 127.0.0.3 (where a redirecting receiver
 * lives). A trap listens on every local address (`::`, dual stack) at the port the targets name.
 * Each target must be refused — a 422 at the API, or accepted and then dead (reason permanent)
 * after exactly one attempt, with no retry — and the trap must never see a connection.
 * The list follows the providers' unit list (packages/dispatcher/test/providers/webhook.test.ts)
 * but can only use names this machine resolves: localhost, and its own host names and addresses.
 */
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { fetchPastShedding } from '../support/http.js';
import { waitFor } from '../support/wait.js';
import { ChildSet, type NotifyChild, chaosEnv, stackTopics } from '../support/chaos/stack.js';
import { ensureTopics } from '@notify/cli';

const KEY = `nk_ssrf_${randomBytes(16).toString('hex')}`;
let t: TestDatabase;
let trap: net.Server;
let trapPort: number;
let trapConnections = 0;
let redirector: http.Server;
let redirectorUrl: string;
let redirectorHits = 0;
let stack: NotifyChild;
let env: Record<string, string>;
const children = new ChildSet();

beforeAll(async () => {
  t = await createTestDatabase();
  trap = net.createServer((s) => {
    trapConnections++;
    s.destroy();
  });
  await new Promise<void>((r) => trap.listen({ port: 0, host: '::', ipv6Only: false }, r));
  trapPort = (trap.address() as AddressInfo).port;
  redirector = http.createServer((req, res) => {
    redirectorHits++;
    const to = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
    res.writeHead(302, { location: to }).end();
  });
  await new Promise<void>((r) => redirector.listen(0, '127.0.0.3', r));
  redirectorUrl = `http://127.0.0.3:${(redirector.address() as AddressInfo).port}`;
  env = chaosEnv({
    databaseUrl: t.url,
    brokers: inject('kafkaBrokers').split(','),
    prefix: `${inject('runId')}.ssrf.${randomBytes(3).toString('hex')}`,
    extra: {
      NOTIFY_API_KEYS: `acme:${KEY}`,
      NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.3/32',
      NOTIFY_MAX_ATTEMPTS: '3',
      NOTIFY_SEND_TIMEOUT_MS: '2000',
    },
  });
  const admin = new Kafka({ brokers: env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await ensureTopics(admin, stackTopics(env), 2);
  await admin.disconnect();
  stack = await children.start('stack', ['api', 'relay', 'dispatcher'], env);
}, 120_000);

afterAll(async () => {
  await children.stopAll();
  await children.killAll();
  const admin = new Kafka({ brokers: env.KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.deleteTopics({ topics: stackTopics(env) }).catch(() => {});
  await admin.disconnect();
  await new Promise((r) => trap?.close(r));
  redirector?.closeAllConnections();
  await new Promise((r) => redirector?.close(r));
  await t?.close();
}, 60_000);

/** This machine's own non-loopback addresses: "external" addresses that still reach the trap. */
function ownAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter((a): a is os.NetworkInterfaceInfo => !!a && !a.internal && !a.address.startsWith('fe80'))
    .map((a) => (a.family === 'IPv6' ? `[${a.address}]` : a.address));
}

describe('SSRF through the API, end to end', () => {
  it('every hostile target is refused without a single connection to it', async () => {
    const P = trapPort;
    const direct = [
      `http://127.0.0.1:${P}/`,
      `http://2130706433:${P}/`, // decimal
      `http://0177.0.0.1:${P}/`, // octal
      `http://0x7f.0.0.1:${P}/`, // hex
      `http://0x7f000001:${P}/`,
      `http://017700000001:${P}/`,
      `http://127.1:${P}/`,
      `http://127.0.0.2:${P}/`,
      `http://[::1]:${P}/`,
      `http://[::ffff:127.0.0.1]:${P}/`, // IPv4-mapped
      `http://[::ffff:7f00:1]:${P}/`,
      `http://[0:0:0:0:0:ffff:127.0.0.1]:${P}/`,
      `http://[64:ff9b::7f00:1]:${P}/`, // NAT64
      `http://[2002:7f00:1::]:${P}/`, // 6to4
      `http://0.0.0.0:${P}/`,
      `http://0:${P}/`,
      `http://[::]:${P}/`,
      `http://localhost:${P}/`, // a name that resolves to 127.0.0.1
      `http://LocalHost:${P}/`, // case does not matter to the resolver
      `http://${os.hostname()}:${P}/`,
      `https://127.0.0.1:${P}/`,
      `http://127.0.0.1:${P}@example.com/`, // credentials: refused at the API
      `http://[fe80::1%25lo]:${P}/`,
      ...ownAddresses().map((a) => `http://${a}:${P}/`),
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:a9fe:a9fe]/',
      'http://[fd00:ec2::254]/latest/meta-data/',
      'http://10.0.0.1/',
      'http://172.16.0.1/',
      'http://192.168.1.1/',
      'http://100.64.0.1/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://224.0.0.1/',
      'http://255.255.255.255/',
      'http://240.0.0.1/',
      `ftp://127.0.0.1:${P}/`,
      `file:///etc/passwd`,
      `gopher://127.0.0.1:${P}/`,
    ];
    // An allowed receiver (127.0.0.3) that redirects to a refused one.
    const redirects = [
      `http://127.0.0.1:${P}/admin`,
      `http://[::1]:${P}/`,
      `http://localhost:${P}/`,
      'http://169.254.169.254/latest/meta-data/',
      `http://2130706433:${P}/`,
    ].map((to) => `${redirectorUrl}/r?to=${encodeURIComponent(to)}`);
    const targets = [...direct, ...redirects];
    expect(targets.length).toBeGreaterThanOrEqual(40);

    const accepted = new Map<string, string>();
    const rejected: string[] = [];
    for (const to of targets) {
      const res = await fetchPastShedding(`${stack.url}/v1/notifications`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ channel: 'webhook', to, body: 'ssrf' }),
      });
      expect([202, 422], `${to} → ${res.status}`).toContain(res.status);
      if (res.status === 202) accepted.set(((await res.json()) as { id: string }).id, to);
      else rejected.push(to);
    }
    await waitFor(
      async () => {
        const { rows } = await t.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM notifications WHERE state = 'queued'");
        return rows[0]!.n === 0;
      },
      { timeoutMs: 60_000, intervalMs: 200, message: 'every hostile notification to end' },
    );
    const { rows } = await t.pool.query<{
      id: string;
      state: string;
      dead_reason: string | null;
      attempts: number;
      last_error: string | null;
    }>('SELECT id, state, dead_reason, attempts, last_error FROM notifications');
    const outcomes = rows.map((r) => `${accepted.get(r.id)} → ${r.state}/${r.dead_reason} after ${r.attempts}: ${r.last_error}`);
    console.info(
      `[ssrf] ${rejected.length} refused at the API (422):\n  ${rejected.join('\n  ')}\n[ssrf] ${rows.length} refused by the dispatcher:\n  ${outcomes.join('\n  ')}`,
    );
    for (const r of rows) {
      expect({ to: accepted.get(r.id), state: r.state, reason: r.dead_reason, attempts: r.attempts }).toEqual({
        to: accepted.get(r.id),
        state: 'dead',
        reason: 'permanent',
        attempts: 1,
      });
    }
    expect(trapConnections, 'connections that reached a refused target').toBe(0);
    expect(redirectorHits, 'the allowed redirector was reached (so the redirects were really tried)').toBe(redirects.length);
  }, 120_000);
});
