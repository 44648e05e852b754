import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Notification, fromKysely, newNotificationId } from '@notify/outbox';
import { ManualClock } from '@notify/runtime/testing';
import {
  type ContentPreparer,
  TemplateRejectedError,
  createContentPreparer,
  suppressionDelete,
  suppressionInsert,
  templateGet,
  templateInsert,
} from '@notify/dispatcher';
import { type TestDatabase, createTestDatabase } from '../../../../test/support/db.js';

let tdb: TestDatabase;
const clock = new ManualClock('2026-05-01T12:00:00Z');
let preparer: ContentPreparer;
let tenant: string;
let n = 0;

beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb.close();
});
beforeEach(() => {
  // A tenant per test: no test sees another's templates or opt-outs.
  tenant = `tenant_${++n}`;
  preparer = createContentPreparer({ db: tdb.db, clock, templateCacheMs: 0 });
});

function notification(overrides: Partial<Notification> = {}): Notification {
  const now = clock.now();
  return {
    id: newNotificationId(now),
    tenant_id: tenant,
    channel: 'email',
    recipient: 'ada@example.com',
    subject: null,
    body: null,
    template: 'welcome',
    template_version: null,
    data: { name: 'Ada', shop: { name: 'Tea & Co' } },
    category: null,
    metadata: {},
    idempotency_key: null,
    request_hash: null,
    state: 'queued',
    dead_reason: null,
    attempts: 0,
    max_attempts: 8,
    next_attempt_at: now,
    last_error: null,
    expires_at: new Date(now.getTime() + 86_400_000),
    traceparent: null,
    created_at: now,
    updated_at: now,
    sent_at: null,
    send_at: null,
    held_until: null,
    priority: 'normal',
    ordering: 'relaxed',
    ...overrides,
  };
}

const db = () => fromKysely(tdb.db);

describe('content: plain bodies', () => {
  it('passes body and subject through untouched', async () => {
    const row = notification({ template: null, body: 'Hello {{name}} <b>', subject: 'Hi', data: { k: 1 }, metadata: { a: 'b' } });
    const prepared = await preparer.prepare(row, 2);
    expect(prepared).toEqual({
      kind: 'ready',
      delivery: {
        id: row.id,
        tenantId: tenant,
        channel: 'email',
        to: 'ada@example.com',
        subject: 'Hi',
        body: 'Hello {{name}} <b>',
        html: null,
        data: { k: 1 },
        metadata: { a: 'b' },
        attempt: 2,
        createdAt: row.created_at,
      },
    });
  });
});

describe('content: templates', () => {
  it('renders the newest version: subject and text as is, the HTML alternative escaped', async () => {
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', subject: 'Old', body: 'v1', now: clock.now() });
    const { version } = await templateInsert(db(), {
      tenantId: tenant,
      name: 'welcome',
      channel: 'email',
      subject: 'Welcome to {{shop.name}}, {{name}}',
      body: 'Hi {{name}}, welcome to {{shop.name}}.',
      htmlBody: '<p>Hi <b>{{name}}</b>, welcome to {{shop.name}}.</p>',
      now: clock.now(),
    });
    expect(version).toBe(2);
    const prepared = await preparer.prepare(
      notification({ data: { name: '<img src=x onerror=alert(1)>', shop: { name: 'Tea & Co' } } }),
      1,
    );
    expect(prepared.kind).toBe('ready');
    if (prepared.kind !== 'ready') return;
    expect(prepared.delivery.subject).toBe('Welcome to Tea & Co, <img src=x onerror=alert(1)>');
    expect(prepared.delivery.body).toBe('Hi <img src=x onerror=alert(1)>, welcome to Tea & Co.');
    expect(prepared.delivery.html).toBe('<p>Hi <b>&lt;img src&#x3D;x onerror&#x3D;alert(1)&gt;</b>, welcome to Tea &amp; Co.</p>');
  });

  it('renders a pinned version even when newer ones exist', async () => {
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: 'one {{name}}', now: clock.now() });
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: 'two {{name}}', now: clock.now() });
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: 'three {{name}}', now: clock.now() });
    expect(await preparer.prepare(notification({ template_version: 1 }), 1)).toMatchObject({
      kind: 'ready',
      delivery: { body: 'one Ada' },
    });
    expect(await preparer.prepare(notification({ template_version: 2 }), 1)).toMatchObject({
      kind: 'ready',
      delivery: { body: 'two Ada' },
    });
    expect(await preparer.prepare(notification(), 1)).toMatchObject({ kind: 'ready', delivery: { body: 'three Ada' } });
  });

  it('a missing template or pinned version is a permanent failure that names it', async () => {
    expect(await preparer.prepare(notification({ template: 'nope' }), 1)).toEqual({
      kind: 'permanent',
      error: `template "nope" not found for tenant ${tenant}`,
    });
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: 'x', now: clock.now() });
    expect(await preparer.prepare(notification({ template_version: 9 }), 1)).toEqual({
      kind: 'permanent',
      error: `template "welcome" version 9 not found for tenant ${tenant}`,
    });
  });

  it("another tenant's template is invisible", async () => {
    await templateInsert(db(), { tenantId: `${tenant}_other`, name: 'welcome', channel: 'email', body: 'x', now: clock.now() });
    expect((await preparer.prepare(notification(), 1)).kind).toBe('permanent');
  });

  it('a missing variable is a permanent failure naming every missing variable and the field', async () => {
    await templateInsert(db(), {
      tenantId: tenant,
      name: 'welcome',
      channel: 'email',
      subject: 'Hi {{name}}',
      body: '{{greeting}} {{name}}, code {{code.value}}',
      now: clock.now(),
    });
    const prepared = await preparer.prepare(notification({ data: { name: 'Ada' } }), 1);
    expect(prepared).toEqual({
      kind: 'permanent',
      error: 'template "welcome" v1 cannot be rendered: body: missing variables "greeting", "code.value"',
    });
  });

  it('a template that would render more than 1 MiB is a permanent failure: a repeated variable cannot amplify data into a huge message', async () => {
    // 2,000 uses of one 600-character variable: 1.2 MB of body (the largest template holds 13,107
    // uses: 60 KB of data would be 786 MB, rendered again at every attempt).
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: '{{a}}'.repeat(2_000), now: clock.now() });
    expect(await preparer.prepare(notification({ data: { a: 'x'.repeat(600) } }), 1)).toEqual({
      kind: 'permanent',
      error: 'template "welcome" v1 cannot be rendered: body: the rendered text is longer than 1048576 characters',
    });
    expect(await preparer.prepare(notification({ data: { a: 'x' } }), 1)).toMatchObject({
      kind: 'ready',
      delivery: { body: 'x'.repeat(2_000) },
    });
  });

  it('a template for another channel is a permanent failure', async () => {
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'sms', body: 'Hi {{name}}', now: clock.now() });
    expect(await preparer.prepare(notification(), 1)).toEqual({
      kind: 'permanent',
      error: 'template "welcome" v1 is for the sms channel, not email',
    });
  });

  it("a notification's own subject wins; line breaks never reach the subject header", async () => {
    await templateInsert(db(), {
      tenantId: tenant,
      name: 'welcome',
      channel: 'email',
      subject: 'Hi {{name}}',
      body: 'b',
      now: clock.now(),
    });
    expect(await preparer.prepare(notification({ subject: 'Explicit' }), 1)).toMatchObject({ delivery: { subject: 'Explicit' } });
    expect(await preparer.prepare(notification({ data: { name: 'Ada\r\nBcc: victim@example.com' } }), 1)).toMatchObject({
      delivery: { subject: 'Hi Ada Bcc: victim@example.com' },
    });
  });

  it('renders sms and webhook templates as text', async () => {
    await templateInsert(db(), { tenantId: tenant, name: 'otp', channel: 'sms', body: 'Code {{code}} <3', now: clock.now() });
    expect(
      await preparer.prepare(notification({ channel: 'sms', recipient: '+14155550100', template: 'otp', data: { code: 123456 } }), 1),
    ).toMatchObject({
      kind: 'ready',
      delivery: { body: 'Code 123456 <3', html: null, subject: null },
    });
  });

  it('caches the newest version for templateCacheMs (injected clock), pinned versions for good', async () => {
    const cached = createContentPreparer({ db: tdb.db, clock, templateCacheMs: 5_000 });
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: 'first', now: clock.now() });
    expect(await cached.prepare(notification(), 1)).toMatchObject({ delivery: { body: 'first' } });
    await templateInsert(db(), { tenantId: tenant, name: 'welcome', channel: 'email', body: 'second', now: clock.now() });
    expect(await cached.prepare(notification(), 1)).toMatchObject({ delivery: { body: 'first' } });
    clock.advance(5_001);
    expect(await cached.prepare(notification(), 1)).toMatchObject({ delivery: { body: 'second' } });
  });
});

describe('content: storing templates', () => {
  it('numbers versions per tenant and name and stores them unchanged', async () => {
    expect(await templateInsert(db(), { tenantId: tenant, name: 'a', channel: 'webhook', body: 'x', now: clock.now() })).toEqual({
      version: 1,
    });
    expect(await templateInsert(db(), { tenantId: tenant, name: 'a', channel: 'webhook', body: 'y', now: clock.now() })).toEqual({
      version: 2,
    });
    expect(await templateInsert(db(), { tenantId: tenant, name: 'b', channel: 'webhook', body: 'z', now: clock.now() })).toEqual({
      version: 1,
    });
    expect(await templateGet(db(), { tenantId: tenant, name: 'a', version: 1 })).toMatchObject({
      body: 'x',
      version: 1,
      createdAt: clock.now(),
    });
  });

  it('refuses bad syntax and fields the channel does not have, with a stable code', async () => {
    await expect(
      templateInsert(db(), { tenantId: tenant, name: 'a', channel: 'email', body: 'Hi {{#admin}}', now: clock.now() }),
    ).rejects.toMatchObject({
      code: 'template_invalid',
      field: 'body',
    });
    await expect(
      templateInsert(db(), { tenantId: tenant, name: 'a', channel: 'sms', body: 'x', htmlBody: '<p>x</p>', now: clock.now() }),
    ).rejects.toBeInstanceOf(TemplateRejectedError);
    await expect(
      templateInsert(db(), { tenantId: tenant, name: 'a', channel: 'email', body: 'x', subject: 'Hi {{name', now: clock.now() }),
    ).rejects.toMatchObject({
      field: 'subject',
    });
  });

  it('the database refuses an HTML body on a non-email template (named CHECK from 0004)', async () => {
    await expect(
      tdb.pool.query(`INSERT INTO templates (tenant_id, name, version, channel, body, html_body) VALUES ($1, 'x', 1, 'sms', 'b', '<p>')`, [
        tenant,
      ]),
    ).rejects.toMatchObject({ constraint: 'templates_html_body_email_only' });
  });
});

describe('content: preferences and consent (suppressions), checked at send time', () => {
  it("a channel-wide opt-out ('*') suppresses every category, with its reason, and needs no template", async () => {
    const before = await preparer.prepare(notification({ template: null, body: 'x' }), 1);
    expect(before.kind).toBe('ready');
    await suppressionInsert(db(), {
      tenantId: tenant,
      channel: 'email',
      recipient: 'ada@example.com',
      reason: 'unsubscribe link',
      now: clock.now(),
    });
    // The same notification, next attempt: opted out in between, so it is suppressed now.
    expect(await preparer.prepare(notification({ template: null, body: 'x' }), 2)).toEqual({
      kind: 'suppressed',
      reason: 'the recipient opted out of every email message (unsubscribe link)',
    });
    expect((await preparer.prepare(notification({ category: 'marketing', template: 'missing' }), 1)).kind).toBe('suppressed');
  });

  it('a category opt-out suppresses that category only', async () => {
    await suppressionInsert(db(), {
      tenantId: tenant,
      channel: 'email',
      recipient: 'ada@example.com',
      category: 'marketing',
      now: clock.now(),
    });
    const body = { template: null, body: 'x' };
    expect(await preparer.prepare(notification({ ...body, category: 'marketing' }), 1)).toEqual({
      kind: 'suppressed',
      reason: 'the recipient opted out of email messages of category "marketing"',
    });
    expect((await preparer.prepare(notification({ ...body, category: 'receipts' }), 1)).kind).toBe('ready');
    expect((await preparer.prepare(notification({ ...body, category: null }), 1)).kind).toBe('ready');
  });

  it('matches email addresses case-insensitively, and only within the tenant and channel', async () => {
    await suppressionInsert(db(), { tenantId: tenant, channel: 'email', recipient: ' Ada@Example.COM ', now: clock.now() });
    const body = { template: null, body: 'x' };
    expect((await preparer.prepare(notification({ ...body, recipient: 'ADA@example.com' }), 1)).kind).toBe('suppressed');
    expect((await preparer.prepare(notification({ ...body, tenant_id: `${tenant}_other` }), 1)).kind).toBe('ready');
    expect((await preparer.prepare(notification({ ...body, channel: 'sms', recipient: '+14155550100' }), 1)).kind).toBe('ready');
  });

  it('recording an opt-out twice is harmless; deleting it restores delivery', async () => {
    const opt = { tenantId: tenant, channel: 'sms' as const, recipient: '+14155550100', category: 'alerts', now: clock.now() };
    await suppressionInsert(db(), { ...opt, reason: 'STOP' });
    await suppressionInsert(db(), { ...opt, reason: 'STOP again' });
    const row = notification({ channel: 'sms', recipient: '+14155550100', category: 'alerts', template: null, body: 'x' });
    expect(await preparer.prepare(row, 1)).toMatchObject({ kind: 'suppressed', reason: expect.stringContaining('STOP again') });
    expect(await suppressionDelete(db(), opt)).toBe(true);
    expect(await suppressionDelete(db(), opt)).toBe(false);
    expect((await preparer.prepare(row, 1)).kind).toBe('ready');
  });
});
