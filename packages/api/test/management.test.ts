import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { type Logger, openSecret } from '@notify/runtime';
import { PROBLEM_CATALOG, Problem, type ProblemCode, createApp, generateApiKey, hashApiKey } from '@notify/api';
import { fromKysely, fromPgClient } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';
import { createTemplateVersion } from '../src/management/templates.js';
import { apiKeyInsert } from '../src/sql/api-key-insert.js';
import {
  SuppressionList,
  SuppressionView,
  TemplatePreview,
  TemplateSummaryList,
  TemplateVersion,
  TemplateVersionList,
  WebhookSecretList,
  WebhookSecretRotated,
} from '../src/management-schemas.js';
import { tenantSigningSecretsGet } from '@notify/providers';

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let keyless: ReturnType<typeof createApp>;
/** An API whose process has NOTIFY_WEBHOOK_SECRET, the secret of tenants without their own. */
let withGlobal: ReturnType<typeof createApp>;
const GLOBAL_SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'));
const secretsKey = randomBytes(32);
const keys = { acme: '', globex: '', initech: '' };
const logged: string[] = [];
const capturing: Logger = {
  error: (o, m) => void logged.push(JSON.stringify([o, m])),
  warn: (o, m) => void logged.push(JSON.stringify([o, m])),
  info: (o, m) => void logged.push(JSON.stringify([o, m])),
  debug: (o, m) => void logged.push(JSON.stringify([o, m])),
  child: () => capturing,
};

beforeAll(async () => {
  t = await createTestDatabase();
  for (const tenant of ['acme', 'globex', 'initech'] as const) {
    const k = generateApiKey();
    await apiKeyInsert(fromKysely(t.db), { id: k.id, tenantId: tenant, keyHash: hashApiKey(k.key), name: tenant, now: clock.now() });
    keys[tenant] = k.key;
  }
  const config = { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } };
  app = createApp({ db: t.db, clock, config, logger: capturing, secrets: { key: secretsKey, rotationGraceMs: 60_000 } });
  keyless = createApp({ db: t.db, clock, config });
  withGlobal = createApp({
    db: t.db,
    clock,
    config,
    logger: capturing,
    secrets: { key: secretsKey, rotationGraceMs: 60_000, globalSecret: GLOBAL_SECRET },
  });
});
afterAll(async () => {
  await t?.close();
});
beforeEach(() => clock.advance(1));

function call(method: string, path: string, opts: { tenant?: keyof typeof keys; body?: unknown; on?: typeof app } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${keys[opts.tenant ?? 'acme']}` };
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  return (opts.on ?? app).request(path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
}

async function expectProblem(res: Response, code: ProblemCode) {
  expect(res.status).toBe(PROBLEM_CATALOG[code].status);
  expect(res.headers.get('content-type')).toBe('application/problem+json');
  return Problem.parse(await res.json());
}

describe('templates', () => {
  it('creates versions, lists them, activates one and previews it', async () => {
    const v1 = await call('POST', '/v1/templates', {
      body: { name: 'welcome', channel: 'email', subject: 'Hi {{name}}', body: 'Hello {{name}}', sample_data: { name: 'Ada' } },
    });
    expect(v1.status).toBe(201);
    expect(TemplateVersion.parse(await v1.json())).toMatchObject({ name: 'welcome', version: 1, active: true });
    const v2 = TemplateVersion.parse(
      await (await call('POST', '/v1/templates', { body: { name: 'welcome', channel: 'email', body: 'Welcome, {{name}}!' } })).json(),
    );
    expect(v2).toMatchObject({ version: 2, active: true });

    const list = TemplateSummaryList.parse(await (await call('GET', '/v1/templates')).json());
    expect(list.data).toEqual([expect.objectContaining({ name: 'welcome', latest_version: 2, active_version: null, versions: 2 })]);

    const activated = await call('PUT', '/v1/templates/welcome/active', { body: { version: 1 } });
    expect(TemplateVersion.parse(await activated.json())).toMatchObject({ version: 1, active: true });
    const versions = TemplateVersionList.parse(await (await call('GET', '/v1/templates/welcome')).json());
    expect(versions.data.map((v) => [v.version, v.active])).toEqual([
      [2, false],
      [1, true],
    ]);

    const preview = TemplatePreview.parse(await (await call('POST', '/v1/templates/welcome/preview', { body: {} })).json());
    expect(preview).toEqual({ name: 'welcome', version: 1, subject: 'Hi Ada', body: 'Hello Ada', html_body: null });
    const other = TemplatePreview.parse(
      await (await call('POST', '/v1/templates/welcome/preview', { body: { version: 2, data: { name: 'Grace' } } })).json(),
    );
    expect(other.body).toBe('Welcome, Grace!');
    await expectProblem(await call('POST', '/v1/templates/welcome/preview', { body: { version: 2, data: {} } }), 'template_invalid');
  });

  it('refuses a template that does not render with 422 and the position of the error', async () => {
    const syntax = await expectProblem(
      await call('POST', '/v1/templates', { body: { name: 'bad', channel: 'sms', body: 'Hi\nthere {{#admin}}' } }),
      'template_invalid',
    );
    expect(syntax.errors).toEqual([expect.objectContaining({ path: 'body', offset: 9, line: 2, column: 7 })]);
    const unknown = await expectProblem(
      await call('POST', '/v1/templates', {
        body: { name: 'bad', channel: 'sms', body: 'Code {{code}} for {{user}}', sample_data: { code: '1' } },
      }),
      'template_invalid',
    );
    expect(unknown.errors).toEqual([
      expect.objectContaining({ path: 'body', message: 'unknown variable "user" at offset 18', offset: 18, line: 1, column: 19 }),
    ]);
    await expectProblem(
      await call('POST', '/v1/templates', { body: { name: 'bad', channel: 'sms', body: 'x', subject: 'no' } }),
      'template_invalid',
    );
    await expectProblem(await call('POST', '/v1/templates', { body: { name: 'bad', channel: 'pigeon', body: 'x' } }), 'validation_failed');
    expect((await call('GET', '/v1/templates/bad')).status).toBe(404);
  });

  it('a preview that would render more than 1 MiB is a 422, not megabytes of answer (a repeated variable amplifies its data)', async () => {
    // 10 KB of template and 600 characters of data render to 1.2 MB: every variable of the
    // largest template (13,107 of them in 64 KiB) would make 60 KB of data 786 MB.
    const created = await call('POST', '/v1/templates', { body: { name: 'amplifier', channel: 'webhook', body: '{{a}}'.repeat(2_000) } });
    expect(created.status).toBe(201);
    const problem = await expectProblem(
      await call('POST', '/v1/templates/amplifier/preview', { body: { data: { a: 'x'.repeat(600) } } }),
      'template_invalid',
    );
    expect(problem.errors).toEqual([{ path: 'body', message: 'the rendered text is longer than 1048576 characters' }]);
    // Within the bound it previews as before.
    const small = TemplatePreview.parse(
      await (await call('POST', '/v1/templates/amplifier/preview', { body: { data: { a: 'x' } } })).json(),
    );
    expect(small.body).toBe('x'.repeat(2_000));
  });

  it('deletes a version only when nothing queued uses it', async () => {
    await call('POST', '/v1/templates', { body: { name: 'otp', channel: 'sms', body: 'v1 {{code}}' } });
    await call('POST', '/v1/templates', { body: { name: 'otp', channel: 'sms', body: 'v2 {{code}}', activate: true } });
    await expectProblem(await call('DELETE', '/v1/templates/otp/versions/2'), 'in_use'); // active
    const queued = await call('POST', '/v1/notifications', {
      body: { channel: 'sms', to: '+15550100', template: 'otp', template_version: 1, data: { code: '1' } },
    });
    expect(queued.status).toBe(202);
    const inUse = await expectProblem(await call('DELETE', '/v1/templates/otp/versions/1'), 'in_use');
    expect(inUse.detail).toMatch(/queued notifications/);
    const id = ((await queued.json()) as { id: string }).id;
    expect((await call('POST', `/v1/notifications/${id}/cancel`)).status).toBe(200);
    expect((await call('DELETE', '/v1/templates/otp/versions/1')).status).toBe(204);
    expect((await call('GET', '/v1/templates/otp/versions/1')).status).toBe(404);
    await expectProblem(await call('DELETE', '/v1/templates/otp/versions/1'), 'not_found');
  });

  it("never shows another tenant's templates", async () => {
    await call('POST', '/v1/templates', { body: { name: 'secret-plan', channel: 'sms', body: 'x' } });
    await expectProblem(await call('GET', '/v1/templates/secret-plan', { tenant: 'globex' }), 'not_found');
    await expectProblem(await call('GET', '/v1/templates/secret-plan/versions/1', { tenant: 'globex' }), 'not_found');
    await expectProblem(await call('POST', '/v1/templates/secret-plan/preview', { tenant: 'globex', body: {} }), 'not_found');
    await expectProblem(await call('PUT', '/v1/templates/secret-plan/active', { tenant: 'globex', body: { version: 1 } }), 'not_found');
    await expectProblem(await call('DELETE', '/v1/templates/secret-plan/versions/1', { tenant: 'globex' }), 'not_found');
    const list = TemplateSummaryList.parse(await (await call('GET', '/v1/templates', { tenant: 'globex' })).json());
    expect(list.data).toEqual([]);
  });

  it('refuses a new version that changes the channel: 409 template_channel_conflict, nothing stored', async () => {
    for (const body of ['v1', 'v2'])
      expect((await call('POST', '/v1/templates', { body: { name: 'receipt', channel: 'email', body } })).status).toBe(201);
    const p = await expectProblem(
      await call('POST', '/v1/templates', { body: { name: 'receipt', channel: 'sms', body: 'v3', activate: true } }),
      'template_channel_conflict',
    );
    expect(p.detail).toBe(
      'template "receipt" has channel email: a new version cannot change it to sms; store the sms text under another name',
    );
    expect(p.errors).toEqual([{ path: 'channel', message: "must be email, the channel of the template's versions" }]);
    const versions = TemplateVersionList.parse(await (await call('GET', '/v1/templates/receipt')).json());
    expect(versions.data.map((v) => [v.version, v.channel, v.active])).toEqual([
      [2, 'email', true],
      [1, 'email', false],
    ]);
    // Another tenant's template of that name is another template.
    expect((await call('POST', '/v1/templates', { tenant: 'globex', body: { name: 'receipt', channel: 'sms', body: 'x' } })).status).toBe(
      201,
    );
  });

  it('holds every writer of the management layer to it (the console stores versions through createTemplateVersion too)', async () => {
    await call('POST', '/v1/templates', { body: { name: 'console-made', channel: 'webhook', body: '{}' } });
    const write = t.db
      .transaction()
      .execute((trx) => createTemplateVersion(fromKysely(trx), 'acme', { name: 'console-made', channel: 'email', body: 'x' }, clock.now()));
    await expect(write).rejects.toMatchObject({ code: 'template_channel_conflict' });
  });

  it('two concurrent first versions with different channels: the second waits for the first and is refused', async () => {
    const first = await t.pool.connect();
    try {
      await first.query('BEGIN');
      await createTemplateVersion(fromPgClient(first), 'acme', { name: 'race', channel: 'email', body: 'e' }, clock.now());
      const second = call('POST', '/v1/templates', { body: { name: 'race', channel: 'sms', body: 's' } });
      // The second writer is blocked behind the first's open transaction before the first commits.
      await waitFor(
        async () => {
          const { rows } = await t.pool.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE NOT l.granted AND a.datname = current_database()`,
          );
          return rows[0]!.n > 0;
        },
        { message: 'the second writer to wait' },
      );
      await first.query('COMMIT');
      await expectProblem(await second, 'template_channel_conflict');
    } finally {
      first.release();
    }
    const versions = TemplateVersionList.parse(await (await call('GET', '/v1/templates/race')).json());
    expect(versions.data.map((v) => [v.version, v.channel])).toEqual([[1, 'email']]);
  });

  it('concurrent versions of one template, as many first versions of another: each stored once, no 500', async () => {
    const post = async (name: string, channel: string) => call('POST', '/v1/templates', { body: { name, channel, body: 'x' } });
    const same = await Promise.all(Array.from({ length: 6 }, () => post('burst', 'sms')));
    expect(same.map((r) => r.status)).toEqual(Array(6).fill(201));
    const stored = TemplateVersionList.parse(await (await call('GET', '/v1/templates/burst')).json());
    expect(stored.data.map((v) => v.version)).toEqual([6, 5, 4, 3, 2, 1]);
    const mixed = await Promise.all(['email', 'sms', 'webhook', 'email', 'sms', 'webhook'].map((channel) => post('mixed', channel)));
    const winner = TemplateVersionList.parse(await (await call('GET', '/v1/templates/mixed')).json()).data.map((v) => v.channel);
    expect(new Set(winner).size).toBe(1);
    expect(mixed.filter((r) => r.status === 201)).toHaveLength(winner.length);
    expect(mixed.filter((r) => r.status === 409)).toHaveLength(6 - winner.length);
  });
});

describe('suppressions', () => {
  it('adds, lists with a cursor and removes opt-outs, per tenant', async () => {
    const added = await call('POST', '/v1/suppressions', {
      body: { channel: 'email', to: ' Ada@Example.com ', reason: 'unsubscribe link' },
    });
    expect(added.status).toBe(201);
    expect(SuppressionView.parse(await added.json())).toMatchObject({ to: 'ada@example.com', category: '*', reason: 'unsubscribe link' });
    for (const category of ['marketing', 'digest']) {
      expect((await call('POST', '/v1/suppressions', { body: { channel: 'email', to: 'bob@example.com', category } })).status).toBe(201);
    }
    const first = SuppressionList.parse(await (await call('GET', '/v1/suppressions?limit=2')).json());
    expect(first.data.map((s) => `${s.to}/${s.category}`)).toEqual(['ada@example.com/*', 'bob@example.com/digest']);
    const second = SuppressionList.parse(await (await call('GET', `/v1/suppressions?limit=2&cursor=${first.next_cursor}`)).json());
    expect(second.data.map((s) => `${s.to}/${s.category}`)).toEqual(['bob@example.com/marketing']);
    expect(second.next_cursor).toBeNull();
    const byRecipient = SuppressionList.parse(await (await call('GET', '/v1/suppressions?channel=email&to=BOB@example.com')).json());
    expect(byRecipient.data).toHaveLength(2);

    expect(SuppressionList.parse(await (await call('GET', '/v1/suppressions', { tenant: 'globex' })).json()).data).toEqual([]);
    await expectProblem(await call('DELETE', '/v1/suppressions?channel=email&to=ada@example.com', { tenant: 'globex' }), 'not_found');
    expect((await call('DELETE', '/v1/suppressions?channel=email&to=ada@example.com')).status).toBe(204);
    await expectProblem(await call('DELETE', '/v1/suppressions?channel=email&to=ada@example.com'), 'not_found');
    await expectProblem(await call('GET', '/v1/suppressions?cursor=nonsense'), 'invalid_query');
    await expectProblem(await call('DELETE', '/v1/suppressions?channel=email'), 'invalid_query');
  });

  it('refuses a recipient its channel cannot have, by the rules enqueue applies, and stores nothing', async () => {
    const before = await t.pool.query('SELECT count(*)::int AS n FROM suppressions');
    for (const [channel, to, message] of [
      ['email', '+14155550100', /email address/],
      ['sms', 'ada@example.com', /E\.164/],
      ['sms', '4155550100', /E\.164/],
      ['webhook', 'ftp://hooks.example.com/in', /http/],
    ] as const) {
      const p = await expectProblem(await call('POST', '/v1/suppressions', { body: { channel, to } }), 'validation_failed');
      expect(p.errors, `${channel} ${to}`).toEqual([{ path: 'to', message: expect.stringMatching(message) }]);
    }
    expect((await t.pool.query('SELECT count(*)::int AS n FROM suppressions')).rows[0].n).toBe(before.rows[0].n);
    // Surrounding spaces are trimmed before the check, as the opt-out is stored and compared.
    expect((await call('POST', '/v1/suppressions', { body: { channel: 'sms', to: ' +14155550100 ' } })).status).toBe(201);
    expect((await call('POST', '/v1/suppressions', { body: { channel: 'webhook', to: 'https://hooks.example.com/in' } })).status).toBe(201);
  });
});

describe('webhook signing secret', () => {
  it('refuses to store a secret without NOTIFY_SECRETS_KEY, and says why', async () => {
    const p = await expectProblem(await call('POST', '/v1/webhook-secret/rotate', { on: keyless }), 'secrets_key_missing');
    expect(p.detail).toMatch(/NOTIFY_SECRETS_KEY/);
    const { rows } = await t.pool.query('SELECT count(*)::int AS n FROM tenant_webhook_secrets');
    expect(rows[0].n).toBe(0);
  });

  it('rotates: the new secret shown once, sealed at rest, the previous one signing through the grace period', async () => {
    await t.pool.query("INSERT INTO tenants (id, webhook_signing_secret, created_at) VALUES ('globex', 'legacy-plain', now())");
    const res = await call('POST', '/v1/webhook-secret/rotate', { tenant: 'globex' });
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const rotated = WebhookSecretRotated.parse(await res.json());
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.previous_expires_at).toBe(new Date(clock.now().getTime() + 60_000).toISOString()); // the legacy secret, sealed, in grace

    const stored = await t.pool.query("SELECT sealed, expires_at FROM tenant_webhook_secrets WHERE tenant_id = 'globex' ORDER BY id");
    expect(stored.rows).toHaveLength(2);
    expect(JSON.stringify(stored.rows)).not.toContain(rotated.secret.slice(6));
    expect(JSON.stringify(stored.rows)).not.toContain('legacy-plain');
    expect(stored.rows.map((r) => openSecret(secretsKey, r.sealed, 'globex'))).toEqual(['legacy-plain', rotated.secret]);
    const tenant = await t.pool.query("SELECT webhook_signing_secret FROM tenants WHERE id = 'globex'");
    expect(tenant.rows[0].webhook_signing_secret).toBeNull();

    const list = WebhookSecretList.parse(await (await call('GET', '/v1/webhook-secret', { tenant: 'globex' })).json());
    expect(list.data.map((s) => s.expires_at === null)).toEqual([true, false]);
    expect(JSON.stringify(list)).not.toContain('whsec_');
    expect(logged.join('\n')).not.toContain(rotated.secret.slice(6));

    clock.advance(60_001);
    const after = WebhookSecretList.parse(await (await call('GET', '/v1/webhook-secret', { tenant: 'globex' })).json());
    expect(after.data).toEqual([expect.objectContaining({ id: rotated.id, expires_at: null })]);
    expect(WebhookSecretList.parse(await (await call('GET', '/v1/webhook-secret')).json()).data).toEqual([]); // acme has none
  });

  /** What a dispatcher would sign `tenant`'s webhooks with now: the opened secrets, newest first. */
  async function signingSecrets(tenant: string): Promise<string[]> {
    const stored = await tenantSigningSecretsGet(fromKysely(t.db), { tenantId: tenant, now: clock.now() });
    return stored.map((s) => s.plain ?? openSecret(secretsKey, s.sealed!, tenant));
  }

  it("a tenant's first rotation keeps NOTIFY_WEBHOOK_SECRET, which signed its webhooks until then, for the grace period", async () => {
    expect(await signingSecrets('initech')).toEqual([]); // none of its own: the dispatcher signs with the global secret
    const res = await call('POST', '/v1/webhook-secret/rotate', { tenant: 'initech', on: withGlobal });
    expect(res.status).toBe(201);
    const first = WebhookSecretRotated.parse(await res.json());
    expect(first.previous_expires_at).toBe(new Date(clock.now().getTime() + 60_000).toISOString());
    expect(await signingSecrets('initech')).toEqual([first.secret, GLOBAL_SECRET]);
    const list = WebhookSecretList.parse(await (await call('GET', '/v1/webhook-secret', { tenant: 'initech' })).json());
    expect(list.data.map((s) => s.expires_at)).toEqual([null, first.previous_expires_at]);
    expect(JSON.stringify(list)).not.toContain('whsec_');
    // The second rotation keeps the first secret, not the global one again.
    const second = WebhookSecretRotated.parse(
      await (await call('POST', '/v1/webhook-secret/rotate', { tenant: 'initech', on: withGlobal })).json(),
    );
    expect(await signingSecrets('initech')).toEqual([second.secret, first.secret, GLOBAL_SECRET]);
    clock.advance(60_001);
    expect(await signingSecrets('initech')).toEqual([second.secret]);
  });

  it('a rotation chooses the grace of the previous secrets; 0 ends them at once', async () => {
    const first = WebhookSecretRotated.parse(
      await (await call('POST', '/v1/webhook-secret/rotate', { tenant: 'globex', body: { previous_expires_in_seconds: 0 } })).json(),
    );
    expect(await signingSecrets('globex')).toEqual([first.secret]);
    const hour = await call('POST', '/v1/webhook-secret/rotate', { tenant: 'globex', body: { previous_expires_in_seconds: 3600 } });
    expect(hour.status).toBe(201);
    const second = WebhookSecretRotated.parse(await hour.json());
    expect(second.previous_expires_at).toBe(new Date(clock.now().getTime() + 3_600_000).toISOString());
    expect(await signingSecrets('globex')).toEqual([second.secret, first.secret]);

    // A leaked current secret: rotate with 0, and only the new one signs (the one in grace stops too).
    const now = await call('POST', '/v1/webhook-secret/rotate', { tenant: 'globex', body: { previous_expires_in_seconds: 0 } });
    const third = WebhookSecretRotated.parse(await now.json());
    expect(third.previous_expires_at).toBe(clock.now().toISOString());
    expect(await signingSecrets('globex')).toEqual([third.secret]);
    const list = WebhookSecretList.parse(await (await call('GET', '/v1/webhook-secret', { tenant: 'globex' })).json());
    expect(list.data).toEqual([expect.objectContaining({ id: third.id, expires_at: null })]);
  });

  it('refuses a rotation body it cannot honour, and stores nothing', async () => {
    const before = await t.pool.query('SELECT count(*)::int AS n FROM tenant_webhook_secrets');
    for (const bad of [
      { previous_expires_in_seconds: -1 },
      { previous_expires_in_seconds: 2_592_001 },
      { previous_expires_in_seconds: 1.5 },
      { grace: 0 },
    ]) {
      const p = await expectProblem(await call('POST', '/v1/webhook-secret/rotate', { body: bad }), 'validation_failed');
      expect(p.errors?.length).toBeGreaterThan(0);
    }
    const text = await app.request('/v1/webhook-secret/rotate', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'text/plain' },
      body: 'previous_expires_in_seconds=0',
    });
    await expectProblem(text, 'unsupported_media_type');
    const after = await t.pool.query('SELECT count(*)::int AS n FROM tenant_webhook_secrets');
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  it('DELETE ends a previous secret in its grace period; the current one and unknown ids are refused', async () => {
    const old = WebhookSecretRotated.parse(await (await call('POST', '/v1/webhook-secret/rotate')).json());
    const current = WebhookSecretRotated.parse(await (await call('POST', '/v1/webhook-secret/rotate')).json());
    expect(await signingSecrets('acme')).toEqual([current.secret, old.secret]);

    // Another tenant's secret is not found, exactly like an id that does not exist.
    await expectProblem(await call('DELETE', `/v1/webhook-secret/${old.id}`, { tenant: 'globex' }), 'not_found');
    await expectProblem(await call('DELETE', '/v1/webhook-secret/999999999'), 'not_found');
    const refused = await expectProblem(await call('DELETE', `/v1/webhook-secret/${current.id}`), 'webhook_secret_current');
    expect(refused.detail).toMatch(/previous_expires_in_seconds/);
    expect(await signingSecrets('acme')).toEqual([current.secret, old.secret]);

    logged.length = 0;
    const retired = await call('DELETE', `/v1/webhook-secret/${old.id}`);
    expect(retired.status).toBe(204);
    expect(await signingSecrets('acme')).toEqual([current.secret]);
    const list = WebhookSecretList.parse(await (await call('GET', '/v1/webhook-secret')).json());
    expect(list.data.map((s) => s.id)).toEqual([current.id]);
    expect(logged.join('\n')).toContain(old.id);
    expect(logged.join('\n')).not.toContain(old.secret.slice(6));
    await expectProblem(await call('DELETE', `/v1/webhook-secret/${old.id}`), 'not_found'); // ended already

    await expectProblem(await call('DELETE', '/v1/webhook-secret/rotate'), 'not_found'); // not an id
  });
});

describe('bulk retry', () => {
  async function deadOne(tenant: keyof typeof keys, reason: 'permanent' | 'exhausted', error: string, to = 'https://hooks.example.com/in') {
    clock.advance(1);
    const res = await call('POST', '/v1/notifications', { tenant, body: { channel: 'webhook', to, body: '{}' } });
    const { id } = (await res.json()) as { id: string };
    await t.pool.query(
      "UPDATE notifications SET state = 'dead', dead_reason = $2, next_attempt_at = NULL, last_error = $3, attempts = 1 WHERE id = $1",
      [id, reason, error],
    );
    return id;
  }

  it('re-queues, with last_error_prefix null, only the dead notifications without a last error', async () => {
    const none = await deadOne('globex', 'exhausted', 'x');
    await t.pool.query('UPDATE notifications SET last_error = NULL WHERE id = $1', [none]);
    const failed = await deadOne('globex', 'exhausted', 'HTTP 503');
    const res = await app.request('/v1/notifications/retry', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.globex}`, 'content-type': 'application/json' },
      body: JSON.stringify({ filter: { dead_reason: 'exhausted', last_error_prefix: null } }),
    });
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ requeued: 1, matched: 1 });
    const states = await t.pool.query('SELECT id, state FROM notifications WHERE id = ANY($1)', [[none, failed]]);
    expect(Object.fromEntries(states.rows.map((r) => [r.id, r.state]))).toEqual({ [none]: 'queued', [failed]: 'dead' });
  });

  it('re-queues the dead notifications a filter matches, once per Idempotency-Key, and can be followed', async () => {
    const http500 = [await deadOne('acme', 'exhausted', 'HTTP 500'), await deadOne('acme', 'exhausted', 'HTTP 500')];
    const other = await deadOne('acme', 'permanent', 'HTTP 410');
    const globex = await deadOne('globex', 'exhausted', 'HTTP 500');
    const body = { filter: { dead_reason: 'exhausted', last_error_prefix: 'HTTP 500' } };
    const first = await app.request('/v1/notifications/retry', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json', 'idempotency-key': 'bulk-1' },
      body: JSON.stringify(body),
    });
    expect(first.status).toBe(202);
    const run = (await first.json()) as { id: string; requeued: number; matched: number };
    expect(run).toMatchObject({ id: expect.stringMatching(/^blk_/), requeued: 2, matched: 2 });
    const again = await app.request('/v1/notifications/retry', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json', 'idempotency-key': 'bulk-1' },
      body: JSON.stringify(body),
    });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: run.id, requeued: 2 });
    const conflict = await app.request('/v1/notifications/retry', {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.acme}`, 'content-type': 'application/json', 'idempotency-key': 'bulk-1' },
      body: JSON.stringify({ filter: { dead_reason: 'permanent' } }),
    });
    await expectProblem(conflict, 'idempotency_conflict');

    const states = await t.pool.query('SELECT id, state FROM notifications WHERE id = ANY($1) ORDER BY id', [[...http500, other, globex]]);
    expect(Object.fromEntries(states.rows.map((r) => [r.id, r.state]))).toEqual({
      [http500[0]!]: 'queued',
      [http500[1]!]: 'queued',
      [other]: 'dead',
      [globex]: 'dead',
    });
    const outbox = await t.pool.query("SELECT count(*)::int AS n FROM outbox WHERE topic = 'requests' AND value LIKE ANY($1)", [
      http500.map((id) => `%${id}%`),
    ]);
    expect(outbox.rows[0].n).toBe(4); // the enqueue's request and the retry's, each

    const follow = await call('GET', `/v1/notifications/retries/${run.id}`);
    expect(await follow.json()).toMatchObject({ id: run.id, requeued: 2, states: { queued: 2 } });
    await expectProblem(await call('GET', `/v1/notifications/retries/${run.id}`, { tenant: 'globex' }), 'not_found');
    await expectProblem(await call('POST', '/v1/notifications/retry', { body: { filter: {}, limit: 10_001 } }), 'validation_failed');
  });
});
