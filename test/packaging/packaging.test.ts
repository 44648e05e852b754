/**
 * The published libraries as a domain service in another repository meets them: `pnpm pack`
 * @notify/outbox and @notify/contract, install the tarballs with npm into a project outside the
 * workspace, and run plain `node` (no tsx, no workspace resolution) against the real PostgreSQL,
 * while the compiled service (`notify start`) delivers what it enqueued. A TypeScript consumer is
 * type-checked against the packed `.d.ts` too.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { type NotifyServer, ROOT, startNotifyProcess } from '../support/notify-process.js';
import { waitFor } from '../support/wait.js';

const run = promisify(execFile);

/** `npm install` of `packages` into the project at `cwd`, from the npm cache where it can. */
const npmInstall = (cwd: string, packages: readonly string[]) =>
  run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', ...packages], { cwd, timeout: 240_000 });

/** A consumer's tsconfig: NodeNext, strict, and the packed .d.ts checked too (no skipLibCheck). */
const consumerTsconfig = (files: readonly string[]) =>
  JSON.stringify({
    compilerOptions: {
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      target: 'ES2022',
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ['node'],
    },
    files,
  });

let t: TestDatabase;
let kafka: TestKafka;
let dir: string;
let pgOnlyDir: string;
let receiver: Server;
let hookUrl: string;
let notify: NotifyServer;
const delivered: string[] = [];

const CONSUMER = `
import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';
import { enqueue, IdempotencyConflictError, ValidationError } from '@notify/outbox';
import { buildDeliveryRequest, buildStatusEvent, parseDeliveryRequest, parseStatusEvent, serializeDeliveryRequest } from '@notify/contract';

const url = process.env.DATABASE_URL;
const intent = (key, body = 'from a packed install') => ({ tenant_id: 'acme', channel: 'webhook', to: process.env.HOOK_URL, body, idempotency_key: key });
const client = new pg.Client({ connectionString: url });
await client.connect();
const count = async (key) => (await client.query('SELECT count(*)::int AS n FROM notifications WHERE idempotency_key = $1', [key])).rows[0].n;

await client.query('BEGIN');
await enqueue(client, intent('rolled-back'));
await client.query('ROLLBACK');
const rolledBack = await count('rolled-back');

await client.query('BEGIN');
const committed = await enqueue(client, intent('committed'));
await client.query('COMMIT');

await client.query('BEGIN');
const repeated = await enqueue(client, intent('committed'));
await client.query('COMMIT');

let conflict = null;
await client.query('BEGIN');
try {
  await enqueue(client, intent('committed', 'a different request'));
} catch (err) {
  conflict = err instanceof IdempotencyConflictError ? { code: err.code, existingId: err.existingId } : String(err);
}
await client.query('ROLLBACK');

let invalid = null;
await client.query('BEGIN');
try {
  await enqueue(client, { tenant_id: 'acme', channel: 'email', to: 'not an address', body: 'x' });
} catch (err) {
  invalid = err instanceof ValidationError ? { code: err.code, paths: err.issues.map((i) => i.path) } : String(err);
}
await client.query('ROLLBACK');

const pool = new pg.Pool({ connectionString: url });
const db = new Kysely({ dialect: new PostgresDialect({ pool }) });
const viaKysely = await db.transaction().execute((trx) => enqueue(trx, intent('kysely')));
await db.destroy();

const n = committed.notification;
const subject = { id: n.id, tenant_id: n.tenant_id, channel: n.channel, recipient: n.recipient, traceparent: n.traceparent };
const request = buildDeliveryRequest(subject, 1, n.next_attempt_at);
const parsedRequest = parseDeliveryRequest(Buffer.from(request.value));
const event = buildStatusEvent(subject, { type: 'notification.queued', state: 'queued', attempts: 0, next_attempt_at: n.next_attempt_at, occurred_at: n.created_at });
const parsedEvent = parseStatusEvent(event.value);
await client.end();

console.log(JSON.stringify({
  rolledBack,
  committed: { id: n.id, created: committed.created, state: n.state },
  repeated: { id: repeated.notification.id, created: repeated.created },
  conflict,
  invalid,
  kysely: { id: viaKysely.notification.id, created: viaKysely.created },
  request: { value: request.value, key: request.key, roundTrip: parsedRequest.ok && serializeDeliveryRequest(parsedRequest.message) === request.value },
  event: { ok: parsedEvent.ok, type: parsedEvent.ok ? parsedEvent.message.type : null },
}));
`;

const TS_CONSUMER = `
import type { Kysely } from 'kysely';
import { enqueue, type EnqueueResult, type NotificationIntent, type OutboxDatabase } from '@notify/outbox';
import { parseStatusEvent, type StatusEventV1 } from '@notify/contract';

export async function welcome(db: Kysely<OutboxDatabase>, userId: string): Promise<string> {
  const intent: NotificationIntent = { tenant_id: 'acme', channel: 'email', to: 'ada@example.com', template: 'welcome', data: { userId }, idempotency_key: userId };
  const result: EnqueueResult = await db.transaction().execute((trx) => enqueue(trx, intent));
  return result.notification.id;
}

export function onEvent(bytes: Buffer): StatusEventV1['state'] | undefined {
  const parsed = parseStatusEvent(bytes);
  return parsed.ok ? parsed.message.state : undefined;
}
`;

// A project that enqueues with pg and has no kysely (an optional peer): the packed types must
// stand on their own, and stay precise (an `any` row would make each expected error unused).
const PG_ONLY_CONSUMER = `
import pg from 'pg';
import { enqueue, type Notification } from '@notify/outbox';

export async function welcome(client: pg.PoolClient, email: string): Promise<Notification> {
  const { notification } = await enqueue(client, { tenant_id: 'acme', channel: 'email', to: email, body: 'Welcome' });
  // @ts-expect-error an id is a string
  const id: number = notification.id;
  // @ts-expect-error created_at is read as a Date
  const created: string = notification.created_at;
  void id;
  void created;
  return notification;
}
`;

// A CommonJS caller: require() gets the packages' CommonJS build (no reliance on require(esm)).
const CJS_CONSUMER = `
const pg = require('pg');
const { enqueue, isNotificationId } = require('@notify/outbox');
const { parseStatusEvent, contractJsonSchemas } = require('@notify/contract');
(async () => {
  const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  await client.query('BEGIN');
  const r = await enqueue(client, { tenant_id: 'acme', channel: 'webhook', to: 'http://127.0.0.1:9/cjs', body: 'via require' });
  await client.query('ROLLBACK');
  const left = (await client.query('SELECT count(*)::int AS n FROM notifications WHERE id = $1', [r.notification.id])).rows[0].n;
  await client.end();
  const bad = parseStatusEvent(Buffer.from('{}'));
  console.log(JSON.stringify({ id: isNotificationId(r.notification.id), left, parsedBad: bad.ok, schemas: Object.keys(contractJsonSchemas()).length }));
})().catch((err) => { console.error(err); process.exit(1); });
`;

const CTS_CONSUMER = `
import outbox = require('@notify/outbox');
import contract = require('@notify/contract');
export const id: boolean = outbox.isNotificationId('ntf_x');
export const topic: string = contract.topicName('notify', contract.TOPICS.events);
`;

beforeAll(async () => {
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  receiver = createServer((req, res) => {
    delivered.push(String(req.headers['webhook-id']));
    req.resume();
    res.writeHead(200).end('ok');
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  dir = await mkdtemp(join(tmpdir(), 'notify-packaging-'));
  for (const pkg of ['outbox', 'contract']) {
    await run('pnpm', ['pack', '--pack-destination', dir], { cwd: join(ROOT, 'packages', pkg) });
  }
  const tarballs = (await readdir(dir)).filter((f) => f.endsWith('.tgz')).map((f) => join(dir, f));
  expect(tarballs).toHaveLength(2);
  await writeFile(join(dir, 'package.json'), JSON.stringify({ name: 'a-domain-service', private: true, type: 'module' }));
  await npmInstall(dir, [...tarballs, 'pg@^8', 'kysely@~0.28', '@types/pg@^8', '@types/node@^20']);
  await writeFile(join(dir, 'consumer.mjs'), CONSUMER);
  await writeFile(join(dir, 'consumer.ts'), TS_CONSUMER);
  await writeFile(join(dir, 'consumer.cjs'), CJS_CONSUMER);
  await writeFile(join(dir, 'consumer-cjs.cts'), CTS_CONSUMER);
  await writeFile(join(dir, 'tsconfig.json'), consumerTsconfig(['consumer.ts', 'consumer-cjs.cts']));

  // Outside `dir`, whose node_modules has kysely: module resolution would find it by walking up.
  pgOnlyDir = await mkdtemp(join(tmpdir(), 'notify-packaging-pg-only-'));
  await writeFile(join(pgOnlyDir, 'package.json'), JSON.stringify({ name: 'a-pg-only-service', private: true, type: 'module' }));
  await npmInstall(pgOnlyDir, [...tarballs.filter((f) => /outbox/.test(f)), 'pg@^8', '@types/pg@^8', '@types/node@^20']);
  await writeFile(join(pgOnlyDir, 'consumer.ts'), PG_ONLY_CONSUMER);
  await writeFile(join(pgOnlyDir, 'tsconfig.json'), consumerTsconfig(['consumer.ts']));

  notify = await startNotifyProcess([], {
    DATABASE_URL: t.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    NOTIFY_TOPIC_PARTITIONS: '2',
    PORT: '0',
    NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
    NOTIFY_RELAY_POLL_MS: '100',
  });
}, 300_000);

afterAll(async () => {
  await notify?.stop();
  receiver?.closeAllConnections();
  await new Promise<void>((r) => receiver?.close(() => r()));
  await kafka?.close();
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
  if (pgOnlyDir) await rm(pgOnlyDir, { recursive: true, force: true });
});

describe('the packed libraries, installed with npm outside the workspace', () => {
  it('ship compiled JavaScript and types only: no workspace-only export condition survives packing', async () => {
    for (const pkg of ['outbox', 'contract']) {
      const manifest = JSON.parse(
        (await run('node', ['-p', 'JSON.stringify(require("./package.json"))'], { cwd: join(dir, 'node_modules', '@notify', pkg) })).stdout,
      );
      expect(JSON.stringify(manifest.exports)).not.toContain('@notify/source');
      expect(manifest.private).toBeUndefined();
      expect(manifest.license).toBe('Apache-2.0');
    }
    const outbox = JSON.parse(
      (await run('node', ['-p', 'JSON.stringify(require("./package.json"))'], { cwd: join(dir, 'node_modules', '@notify', 'outbox') }))
        .stdout,
    );
    expect(outbox.dependencies).toBeUndefined(); // pg and kysely are the caller's (optional peers)
  });

  it('enqueue in a caller transaction with plain node: rollback leaves nothing, commit is delivered, Kysely works, a repeated key returns the original', async () => {
    const { stdout } = await run('node', ['consumer.mjs'], { cwd: dir, env: { ...process.env, DATABASE_URL: t.url, HOOK_URL: hookUrl } });
    const out = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(out.rolledBack).toBe(0);
    expect(out.committed).toMatchObject({ created: true, state: 'queued' });
    expect(out.repeated).toEqual({ id: out.committed.id, created: false });
    expect(out.conflict).toEqual({ code: 'idempotency_conflict', existingId: out.committed.id });
    expect(out.invalid).toEqual({ code: 'validation_failed', paths: ['to'] });
    expect(out.kysely.created).toBe(true);
    expect(out.event).toEqual({ ok: true, type: 'notification.queued' });
    expect(out.request.roundTrip).toBe(true);

    // The service delivers both committed notifications, and nothing of the rolled-back one.
    await waitFor(() => delivered.includes(out.committed.id) && delivered.includes(out.kysely.id), {
      timeoutMs: 30_000,
      message: 'both delivered',
    });
    // The receiver counts a call when it arrives; the dispatcher records the outcome after the answer.
    const states = async () =>
      (await t.db.selectFrom('notifications').select(['idempotency_key', 'state']).orderBy('idempotency_key').execute()).map((r) => [
        r.idempotency_key,
        r.state,
      ]);
    await waitFor(async () => (await states()).every(([, state]) => state === 'sent'), {
      timeoutMs: 30_000,
      message: 'both recorded sent',
    });
    expect(await states()).toEqual([
      ['committed', 'sent'],
      ['kysely', 'sent'],
    ]);
    // The packed contract's serializer writes the bytes the relay put on the wire.
    const onWire = (await kafka.readAll('requests', 2)).find((m) => m.headers?.['notification-id']?.toString() === out.committed.id);
    expect(onWire?.value?.toString()).toBe(out.request.value);
    expect(onWire?.key?.toString()).toBe(out.request.key);
  });

  it('serve CommonJS callers: require() enqueues inside BEGIN … ROLLBACK (nothing left) and parses with the contract', async () => {
    const { stdout } = await run('node', ['consumer.cjs'], { cwd: dir, env: { ...process.env, DATABASE_URL: t.url } });
    expect(JSON.parse(stdout.trim().split('\n').pop()!)).toEqual({ id: true, left: 0, parsedBad: false, schemas: 5 });
  });

  it('type-checks TypeScript consumers, ESM and CommonJS, against the packed .d.ts (NodeNext, strict, no skipLibCheck)', async () => {
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: dir });
  }, 180_000);

  it('type-checks a project that enqueues with pg and has no kysely installed, with precise row types', async () => {
    await expect(readdir(join(pgOnlyDir, 'node_modules'))).resolves.not.toContain('kysely');
    await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], { cwd: pgOnlyDir });
  }, 180_000);
});
