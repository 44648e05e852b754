import { randomBytes } from 'node:crypto';
import http from 'node:http';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import { ensureDatabase, withDatabase } from '@notify/migrations';
import { createApp, hashApiKey } from '@notify/api';
import { createTenantSecretSource } from '@notify/providers';
import { openSecret, sealSecret, systemClock } from '@notify/runtime';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { runNotifyCli, startNotifyProcess } from '../../../test/support/notify-process.js';

// Each test runs the compiled CLI as a child one to three times; on a loaded 2-core machine a
// child has taken over 20 s to start, so the default 60 s is too short for three of them.
vi.setConfig({ testTimeout: 180_000 });

const RETRY = { maxAttempts: 3, baseDelayMs: 100, maxDelayMs: 1000, jitter: 0, defaultTtlMs: 60_000 };
const UNREACHABLE_PG = 'postgres://postgres:secret@127.0.0.1:1/nowhere';

let t: TestDatabase;
const fresh = `${inject('runId')}_cli_${randomBytes(3).toString('hex')}`;
const empty = `${inject('runId')}_cli_empty_${randomBytes(3).toString('hex')}`;

beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
  const admin = new pg.Client({ connectionString: withDatabase(inject('databaseUrl'), 'postgres') });
  await admin.connect();
  for (const name of [fresh, empty]) await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
  await admin.end();
});

/** stderr as lines, without the blank ones. */
const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

describe('notify migrate', () => {
  it('creates the database, applies every migration, and a second run changes nothing', async () => {
    const url = withDatabase(inject('databaseUrl'), fresh);
    const first = await runNotifyCli(['migrate'], { DATABASE_URL: url });
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(`created database ${fresh}`);
    expect(first.stdout).toMatch(/applied 0001_initial, .*0005_api/);
    const second = await runNotifyCli(['migrate'], { DATABASE_URL: url });
    expect(second.code).toBe(0);
    expect(second.stdout.trim()).toBe('notify: database is up to date');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>('SELECT name FROM kysely_migration ORDER BY name');
      expect(rows.map((r) => r.name)).toContain('0005_api');
      expect(new Set(rows.map((r) => r.name)).size).toBe(rows.length);
    } finally {
      await client.end();
    }
  });
});

describe('notify migrate behind a long transaction', () => {
  let held: TestDatabase;
  let holder: pg.Client;
  afterAll(async () => {
    await holder?.end();
    await held?.close();
  });

  it('waits NOTIFY_MIGRATE_LOCK_TIMEOUT_MS for a lock, NOTIFY_MIGRATE_LOCK_ATTEMPTS times, then exits 1 saying why', async () => {
    held = await createTestDatabase();
    // The newest migration pending again, and every table but the ledger's held ACCESS EXCLUSIVE by
    // an open transaction: whatever the migration touches, it waits for that transaction.
    const { rows } = await held.pool.query<{ name: string }>(
      'DELETE FROM kysely_migration WHERE name = (SELECT max(name) FROM kysely_migration) RETURNING name',
    );
    const migration = rows[0]!.name;
    const tables = await held.pool.query<{ name: string }>(
      "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' AND tablename NOT LIKE 'kysely\\_%'",
    );
    holder = new pg.Client({ connectionString: held.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${tables.rows.map((t) => pg.escapeIdentifier(t.name)).join(', ')} IN ACCESS EXCLUSIVE MODE`);

    const res = await runNotifyCli(['migrate'], {
      DATABASE_URL: held.url,
      NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: '100',
      NOTIFY_MIGRATE_LOCK_ATTEMPTS: '2',
    });
    expect(res.code).toBe(1);
    expect(lines(res.stdout)).toEqual([
      `notify: ${migration} waited 100 ms for a lock (a long transaction holds one it needs); rolled back, trying again (1 of 2)`,
    ]);
    expect(lines(res.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(`^notify: migration ${migration} waited 100 ms for a lock 2 times and was rolled back .*run \`notify migrate\` again$`),
      ),
    ]);
    const ledger = await held.pool.query('SELECT 1 FROM kysely_migration WHERE name = $1', [migration]);
    expect(ledger.rowCount).toBe(0);
  });
});

describe.concurrent('clear one-line failures', () => {
  it('unreachable PostgreSQL: one line naming the URL without its password, exit 1', async () => {
    const res = await runNotifyCli(['migrate'], { DATABASE_URL: UNREACHABLE_PG });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([
      'notify: cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1:1/nowhere (ECONNREFUSED); start it or set DATABASE_URL',
    ]);
    expect(res.stderr).not.toContain('secret');
  });

  it("a server that refuses the login: PostgreSQL's own reason, not 'start it', exit 1", async () => {
    const url = new URL(t.url);
    url.username = 'no_such_role_notify';
    url.password = 'secret';
    const res = await runNotifyCli(['migrate'], { DATABASE_URL: url.toString() });
    expect(res.code).toBe(1);
    const masked = url.toString().replace(':secret@', ':***@');
    expect(lines(res.stderr)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^notify: PostgreSQL at ${masked.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} refused the connection: .*no_such_role_notify.* \\(SQLSTATE 28[0-9A-Z]{3}\\); check the user, password and database of DATABASE_URL$`,
        ),
      ),
    ]);
    expect(res.stderr).not.toContain('secret');
  });

  it('start with an out-of-range setting names the variable, exit 2 (fix the configuration), before reaching anything', async () => {
    const res = await runNotifyCli(['start'], { DATABASE_URL: UNREACHABLE_PG, NOTIFY_MAX_ATTEMPTS: '0' });
    expect(res.code).toBe(2);
    expect(lines(res.stderr)).toEqual(['notify: invalid configuration: NOTIFY_MAX_ATTEMPTS: expected a number from 1 to 100, got 0']);
    expect(res.stdout).toBe('');
  });

  it('migrate with an invalid setting: exit 2 too', async () => {
    const res = await runNotifyCli(['migrate'], { DATABASE_URL: UNREACHABLE_PG, NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: '0' });
    expect(res.code).toBe(2);
    expect(lines(res.stderr)).toEqual([
      'notify: invalid configuration: NOTIFY_MIGRATE_LOCK_TIMEOUT_MS: expected a number from 1 to 600000, got 0',
    ]);
  });

  it('start refuses when PostgreSQL is unreachable: a failure at run time, exit 1', async () => {
    const res = await runNotifyCli(['start'], { DATABASE_URL: UNREACHABLE_PG, PORT: '0' });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([expect.stringMatching(/^notify: cannot reach PostgreSQL at .*; start it or set DATABASE_URL$/)]);
  });

  it('start refuses when Kafka is unreachable, and listens nowhere', async () => {
    const res = await runNotifyCli(['start'], { DATABASE_URL: t.url, KAFKA_BROKERS: '127.0.0.1:1', PORT: '0' });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([
      expect.stringMatching(/^notify: cannot reach Kafka at 127\.0\.0\.1:1 \(.*\); start it \(`pnpm kafka start`\) or set KAFKA_BROKERS$/),
    ]);
    expect(res.stdout).not.toContain('listening');
  });

  it('start refuses to run on an unmigrated database', async () => {
    await ensureDatabase(withDatabase(inject('databaseUrl'), empty));
    const res = await runNotifyCli(['start'], { DATABASE_URL: withDatabase(inject('databaseUrl'), empty), PORT: '0' });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual([
      expect.stringMatching(
        /^notify: the database schema is not up to date \(pending: 0001_initial, .*\); run `pnpm notify migrate` first$/,
      ),
    ]);
  });

  it('start refuses an unknown role (usage error, exit 2)', async () => {
    const res = await runNotifyCli(['start', '--roles', 'api,mailer'], { DATABASE_URL: t.url });
    expect(res.code).toBe(2);
    expect(lines(res.stderr)[0]).toBe('notify: --roles: unknown role "mailer"; expected a comma-separated subset of api,relay,dispatcher');
  });

  it('start refuses a stray argument (usage error, exit 2)', async () => {
    const res = await runNotifyCli(['start', '--roles', 'api', 'extra'], { DATABASE_URL: t.url });
    expect(res.code).toBe(2);
    expect(lines(res.stderr)[0]).toBe('notify: start: unexpected argument "extra"');
  });

  it('start refuses PORT equal to NOTIFY_ADMIN_PORT and a malformed NOTIFY_WEBHOOK_ALLOW_CIDRS before anything starts', async () => {
    const ports = await runNotifyCli(['start'], { DATABASE_URL: t.url, PORT: '3449', NOTIFY_ADMIN_PORT: '3449' });
    expect(ports.code).toBe(2);
    expect(lines(ports.stderr)).toEqual([
      'notify: invalid configuration: NOTIFY_ADMIN_PORT: must differ from PORT (both are 3449): the admin endpoints need a port of their own',
    ]);
    const cidrs = await runNotifyCli(['start'], { DATABASE_URL: t.url, PORT: '0', NOTIFY_WEBHOOK_ALLOW_CIDRS: 'banana/99' });
    expect(cidrs.code).toBe(2);
    expect(lines(cidrs.stderr)).toEqual([
      'notify: invalid configuration: NOTIFY_WEBHOOK_ALLOW_CIDRS: "banana/99" is not a CIDR (e.g. 127.0.0.1/32 or fd00::/8)',
    ]);
  });

  it('the API refuses two Idempotency-Key header lines (Node would join them into one key), and takes one holding ", "', async () => {
    const key = 'nk_cli_dupkey_0123456789abcdef';
    const notify = await startNotifyProcess(['--roles', 'api'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: '127.0.0.1:1',
      PORT: '0',
      NOTIFY_API_KEYS: `acme:${key}`,
    });
    // node:http sends an array value as one header line per element; fetch would join them first.
    const post = (idempotencyKey: string | string[]) =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request(`${notify.url}/v1/notifications`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
        });
        req.on('response', (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
        req.end(JSON.stringify({ channel: 'email', to: 'ada@example.com', body: 'Hi' }));
      });
    try {
      const two = await post(['dup-a', 'dup-b']);
      expect(two.status).toBe(422);
      expect(JSON.parse(two.body)).toMatchObject({ code: 'validation_failed', errors: [{ path: 'Idempotency-Key' }] });
      const one = await post('dup-a, dup-b');
      expect(one.status).toBe(202);
      const { rows } = await t.pool.query("SELECT idempotency_key FROM notifications WHERE idempotency_key LIKE 'dup-%'");
      expect(rows).toEqual([{ idempotency_key: 'dup-a, dup-b' }]);
    } finally {
      await notify.stop();
    }
  });

  it('start warns, once, about NOTIFY_* variables it does not read, with the closest known name', async () => {
    const notify = await startNotifyProcess(['--roles', 'api'], {
      DATABASE_URL: t.url,
      KAFKA_BROKERS: '127.0.0.1:1',
      PORT: '0',
      NOTIFY_MAX_ATEMPTS: '3',
      NOTIFY_COLOUR: 'blue',
    });
    try {
      const warned = notify
        .output()
        .split('\n')
        .filter((l) => l.includes('notify does not read'));
      expect(warned).toHaveLength(1);
      expect(JSON.parse(warned[0]!)).toMatchObject({
        level: 'warn',
        variables: ['NOTIFY_COLOUR', 'NOTIFY_MAX_ATEMPTS'],
        msg: 'notify does not read NOTIFY_COLOUR, NOTIFY_MAX_ATEMPTS (did you mean NOTIFY_MAX_ATTEMPTS?): they have no effect (docs/configuration.md lists every variable)',
      });
    } finally {
      expect(await notify.stop()).toBe(0);
    }
  });

  it('an unknown command exits 2', async () => {
    const res = await runNotifyCli(['deploy'], {});
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('unknown command "deploy"');
  });
});

describe.concurrent('notify api-keys', () => {
  it('create prints a key once, stores only its hash, and the key authenticates; revoke makes it 401', async () => {
    const created = await runNotifyCli(['api-keys', 'create', '--tenant', 'cli-tenant', '--name', 'ci'], { DATABASE_URL: t.url });
    expect(created.code).toBe(0);
    const key = created.stdout.trim();
    expect(key).toMatch(/^nk_[\w-]{43}$/);
    expect(created.stderr).toMatch(/Created API key key_\S+ for tenant cli-tenant/);

    const stored = await t.db.selectFrom('api_keys').selectAll().where('tenant_id', '=', 'cli-tenant').execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]!.key_hash).toBe(hashApiKey(key));
    expect(JSON.stringify(stored)).not.toContain(key);

    const app = createApp({ db: t.db, config: { retry: RETRY } });
    const ok = await app.request('/v1/notifications', { headers: { authorization: `Bearer ${key}` } });
    expect(ok.status).toBe(200);

    const list = await runNotifyCli(['api-keys', 'list', '--tenant', 'cli-tenant'], { DATABASE_URL: t.url });
    expect(list.stdout).toContain(`${stored[0]!.id}\tcli-tenant\tactive\tci`);
    expect(list.stdout).not.toContain(key);

    const revoked = await runNotifyCli(['api-keys', 'revoke', stored[0]!.id], { DATABASE_URL: t.url });
    expect(revoked.code).toBe(0);
    const denied = await app.request('/v1/notifications', { headers: { authorization: `Bearer ${key}` } });
    expect(denied.status).toBe(401);
  });

  it('create --json prints id, tenant and key on one line', async () => {
    const res = await runNotifyCli(['api-keys', 'create', '--tenant', 'json-tenant', '--json'], { DATABASE_URL: t.url });
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout) as { id: string; tenant_id: string; key: string };
    expect(out).toMatchObject({ tenant_id: 'json-tenant', id: expect.stringMatching(/^key_/), key: expect.stringMatching(/^nk_/) });
  });

  it('create without --tenant is a usage error', async () => {
    const res = await runNotifyCli(['api-keys', 'create'], { DATABASE_URL: t.url });
    expect(res.code).toBe(2);
    expect(res.stderr).toContain('--tenant is required');
  });

  it('create refuses a stray argument (usage error, exit 2)', async () => {
    const res = await runNotifyCli(['api-keys', 'create', '--tenant', 'acme', 'stray'], { DATABASE_URL: t.url });
    expect(res.code).toBe(2);
    expect(lines(res.stderr)[0]).toBe('notify: api-keys create: unexpected argument "stray"');
    expect(await t.db.selectFrom('api_keys').select('id').where('tenant_id', '=', 'acme').execute()).toEqual([]);
  });

  it('create with an invalid --tenant says what is wrong with it', async () => {
    const res = await runNotifyCli(['api-keys', 'create', '--tenant', 'a b'], { DATABASE_URL: t.url });
    expect(res.code).toBe(2);
    expect(lines(res.stderr)).toEqual([
      'notify: api-keys create: --tenant "a b" contains " "; a tenant id is 1–200 letters, digits, "_", ".", ":" or "-"',
    ]);
  });

  it('revoke of an unknown id fails with exit 1', async () => {
    const res = await runNotifyCli(['api-keys', 'revoke', 'key_nope'], { DATABASE_URL: t.url });
    expect(res.code).toBe(1);
    expect(lines(res.stderr)).toEqual(['notify: api-keys revoke: no key key_nope']);
  });
});

describe('notify webhook-secrets seal', () => {
  const KEY = randomBytes(32);
  const env = (db: TestDatabase, key: Buffer | null = KEY) => ({
    DATABASE_URL: db.url,
    ...(key ? { NOTIFY_SECRETS_KEY: key.toString('base64') } : {}),
  });

  it("seals each tenant's plaintext secret as its current one (the same secret), clears the column; dry run and a second run change nothing", async () => {
    const db = await createTestDatabase();
    try {
      const now = new Date();
      await db.pool.query(
        `INSERT INTO tenants (id, created_at, webhook_signing_secret)
         VALUES ('legacy-a', $1, 'whsec_AAAA'), ('legacy-b', $1, 'whsec_BBBB'), ('modern', $1, NULL)`,
        [now],
      );
      const dry = await runNotifyCli(['webhook-secrets', 'seal', '--dry-run'], env(db));
      expect(dry.code).toBe(0);
      expect(lines(dry.stdout)).toEqual(['would seal legacy-a', 'would seal legacy-b']);
      expect(lines(dry.stderr)).toEqual(['2 tenant(s) would seal (dry run: nothing written)']);
      const untouched = await db.pool.query('SELECT count(*)::int AS n FROM tenants WHERE webhook_signing_secret IS NOT NULL');
      expect(untouched.rows[0].n).toBe(2);

      const res = await runNotifyCli(['webhook-secrets', 'seal'], env(db));
      expect(res.code).toBe(0);
      expect(lines(res.stdout)).toEqual(['sealed legacy-a', 'sealed legacy-b']);
      expect(res.stdout + res.stderr).not.toContain('whsec_');
      const { rows: left } = await db.pool.query('SELECT id FROM tenants WHERE webhook_signing_secret IS NOT NULL');
      expect(left).toEqual([]);
      const { rows: sealed } = await db.pool.query<{ tenant_id: string; sealed: string; expires_at: Date | null }>(
        'SELECT tenant_id, sealed, expires_at FROM tenant_webhook_secrets ORDER BY tenant_id',
      );
      expect(sealed.map((r) => [r.tenant_id, r.expires_at])).toEqual([
        ['legacy-a', null],
        ['legacy-b', null],
      ]);
      // The same secret, bound to its tenant: it opens under the key for that tenant only.
      expect(openSecret(KEY, sealed[0]!.sealed, 'legacy-a')).toBe('whsec_AAAA');
      expect(openSecret(KEY, sealed[1]!.sealed, 'legacy-b')).toBe('whsec_BBBB');
      expect(() => openSecret(KEY, sealed[0]!.sealed, 'legacy-b')).toThrow();
      // What the dispatcher signs with is that one secret.
      const signWith = createTenantSecretSource({ db: db.db, clock: systemClock, secretsKey: KEY });
      expect(await signWith('legacy-a')).toEqual(['whsec_AAAA']);

      const again = await runNotifyCli(['webhook-secrets', 'seal'], env(db));
      expect(again.code).toBe(0);
      expect(again.stdout).toBe('');
      expect(lines(again.stderr)).toEqual(['no tenant has a plaintext webhook secret']);
    } finally {
      await db.close();
    }
  });

  it('start warns about tenants with a plaintext secret, naming the command, never the secret', async () => {
    const db = await createTestDatabase();
    try {
      await db.pool.query(
        `INSERT INTO tenants (id, created_at, webhook_signing_secret) VALUES ('p1', now(), 'whsec_P1'), ('p2', now(), 'whsec_P2')`,
      );
      const notify = await startNotifyProcess(['--roles', 'api'], { DATABASE_URL: db.url, KAFKA_BROKERS: '127.0.0.1:1', PORT: '0' });
      try {
        const warned = notify
          .output()
          .split('\n')
          .filter((l) => l.includes('in plaintext'));
        expect(warned).toHaveLength(1);
        expect(JSON.parse(warned[0]!)).toMatchObject({ level: 'warn', tenants: 2 });
        expect(warned[0]).toContain('notify webhook-secrets seal');
        expect(notify.output()).not.toContain('whsec_');
      } finally {
        expect(await notify.stop()).toBe(0);
      }
    } finally {
      await db.close();
    }
  });

  it('leaves a tenant that also has a sealed current secret, names it, and exits 1', async () => {
    const db = await createTestDatabase();
    try {
      await db.pool.query(
        `INSERT INTO tenants (id, created_at, webhook_signing_secret) VALUES ('both', now(), 'whsec_CCCC'), ('plain', now(), 'whsec_DDDD')`,
      );
      await db.pool.query(`INSERT INTO tenant_webhook_secrets (tenant_id, sealed, created_at) VALUES ('both', $1, now())`, [
        sealSecret(KEY, 'whsec_EEEE', 'both'),
      ]);
      const res = await runNotifyCli(['webhook-secrets', 'seal'], env(db));
      expect(res.code).toBe(1);
      expect(lines(res.stdout)).toEqual(['sealed plain']);
      expect(lines(res.stderr)).toEqual([
        "left both: it has a sealed current secret as well as the plaintext one; POST /v1/webhook-secret/rotate with that tenant's key clears the plaintext",
        '1 tenant(s) sealed',
        'notify: webhook-secrets seal: 1 tenant(s) left as they were',
      ]);
      const { rows } = await db.pool.query('SELECT id, webhook_signing_secret FROM tenants ORDER BY id');
      expect(rows).toEqual([
        { id: 'both', webhook_signing_secret: 'whsec_CCCC' },
        { id: 'plain', webhook_signing_secret: null },
      ]);
    } finally {
      await db.close();
    }
  });

  it('refuses without NOTIFY_SECRETS_KEY (exit 2, nothing written), and a stray argument or another subcommand', async () => {
    const db = await createTestDatabase();
    try {
      await db.pool.query(`INSERT INTO tenants (id, created_at, webhook_signing_secret) VALUES ('legacy', now(), 'whsec_FFFF')`);
      const noKey = await runNotifyCli(['webhook-secrets', 'seal'], env(db, null));
      expect(noKey.code).toBe(2);
      expect(lines(noKey.stderr)[0]).toMatch(/^notify: webhook-secrets seal: set NOTIFY_SECRETS_KEY/);
      const { rows } = await db.pool.query('SELECT webhook_signing_secret FROM tenants');
      expect(rows).toEqual([{ webhook_signing_secret: 'whsec_FFFF' }]);
      const stray = await runNotifyCli(['webhook-secrets', 'seal', 'now'], env(db));
      expect(stray.code).toBe(2);
      expect(lines(stray.stderr)[0]).toBe('notify: webhook-secrets seal: unexpected argument "now"');
      const other = await runNotifyCli(['webhook-secrets', 'rotate'], env(db));
      expect(other.code).toBe(2);
      expect(lines(other.stderr)[0]).toBe('notify: webhook-secrets: expected seal, got "rotate"');
    } finally {
      await db.close();
    }
  });
});
