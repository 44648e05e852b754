import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@notify/runtime/testing';
import { createApp, generateApiKey, hashApiKey } from '@notify/api';
import { type Channel, fromKysely, newNotificationId } from '@notify/outbox';
import { endpointId } from '@notify/providers';
import { createDb } from '@notify/runtime';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { explain, recordStatements } from '../../../test/support/plans.js';
import { notificationPage } from '../src/console/sql/notification-page.js';
import { optOutPage } from '../src/console/sql/opt-out-page.js';
import { apiKeyInsert } from '../src/sql/api-key-insert.js';
import { apiKeyRevoke } from '../src/sql/api-key-revoke.js';

// The console through app.request(): sign-in, cookie flags, CSRF, tenancy, privacy. The browser
// test (test/browser) drives the same pages in Chromium against `notify start`.
let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let showing: ReturnType<typeof createApp>;
/** A console told the email providers' endpoint origins, as `notify start` tells it (`providerOrigins`). */
let withOrigins: ReturnType<typeof createApp>;
const clock = new ManualClock(new Date('2026-06-01T12:00:00Z'));
const keys = { acme: '', globex: '', initech: '', umbrella: '', hooli: '', wayne: '', stark: '', tyrell: '', cyberdyne: '' };
const keyIds = { acme: '' };

beforeAll(async () => {
  t = await createTestDatabase();
  for (const tenant of ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'wayne', 'stark', 'tyrell', 'cyberdyne'] as const) {
    const k = generateApiKey();
    await apiKeyInsert(fromKysely(t.db), { id: k.id, tenantId: tenant, keyHash: hashApiKey(k.key), name: tenant, now: clock.now() });
    keys[tenant] = k.key;
    if (tenant === 'acme') keyIds.acme = k.id;
  }
  const config = { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } };
  app = createApp({ db: t.db, clock, config });
  showing = createApp({ db: t.db, clock, config, console: { showContent: true } });
  withOrigins = createApp({
    db: t.db,
    clock,
    config,
    console: { endpointOrigins: { email: { primary: 'smtp://mx.example:25', fallback: 'smtp://mx2.example:25' } } },
  });
});
afterAll(async () => {
  await t?.close();
});

async function signIn(tenant: keyof typeof keys, on = app) {
  const res = await on.request('/console/login', { method: 'POST', body: new URLSearchParams({ api_key: keys[tenant] }) });
  expect(res.status).toBe(303);
  const cookie = res.headers.get('set-cookie')!;
  const session = /notify_console=([^;]+)/.exec(cookie)![1]!;
  const pageRes = await on.request('/console/notifications', { headers: { cookie: `notify_console=${session}` } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await pageRes.text())![1]!;
  return { cookie, headers: { cookie: `notify_console=${session}` }, csrf };
}

async function enqueue(tenant: keyof typeof keys, body: Record<string, unknown>) {
  clock.advance(1);
  const res = await app.request('/v1/notifications', {
    method: 'POST',
    headers: { authorization: `Bearer ${keys[tenant]}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return ((await res.json()) as { id: string }).id;
}

describe('console', () => {
  it('signs in with an API key into an HttpOnly, SameSite=Strict, expiring cookie, Secure over TLS', async () => {
    const { cookie } = await signIn('acme');
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Max-Age=28800/);
    expect(cookie).toMatch(/Path=\/console/);
    expect(cookie).not.toMatch(/Secure/);
    const tls = await app.request('https://notify.example/console/login', {
      method: 'POST',
      body: new URLSearchParams({ api_key: keys.acme }),
    });
    expect(tls.headers.get('set-cookie')).toMatch(/Secure/);
    const bad = await app.request('/console/login', { method: 'POST', body: new URLSearchParams({ api_key: 'nk_wrong' }) });
    expect(bad.status).toBe(401);
    expect(await bad.text()).toContain('not valid');
  });

  it('sends pages without a session to the sign-in page, which leads back to them after signing in', async () => {
    const res = await app.request('/console/notifications?state=dead');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/login?next=%2Fconsole%2Fnotifications%3Fstate%3Ddead');
    const login = await (await app.request(res.headers.get('location')!)).text();
    expect(login).toContain('<input type="hidden" name="next" value="/console/notifications?state=dead" />');
    expect(login).not.toContain('Your session has ended');
    const signedIn = await app.request('/console/login', {
      method: 'POST',
      body: new URLSearchParams({ api_key: keys.acme, next: '/console/notifications?state=dead' }),
    });
    expect(signedIn.headers.get('location')).toBe('/console/notifications?state=dead');
    // Never off the console, nor to the sign-in or sign-out: then the notifications.
    for (const next of [
      'https://evil.example/console/x',
      '//evil.example/console/x',
      '/console/logout',
      '/consolex',
      '/console/\\evil',
      'javascript:alert(1)',
    ]) {
      const res = await app.request('/console/login', { method: 'POST', body: new URLSearchParams({ api_key: keys.acme, next }) });
      expect(res.headers.get('location'), next).toBe('/console/notifications');
    }
  });

  it('says a session has ended when its cookie comes back (expired, signed out, key revoked), and clears the cookie', async () => {
    const s = await signIn('acme');
    await t.pool.query("DELETE FROM console_sessions WHERE tenant_id = 'acme'"); // ended elsewhere (an expiry or a revoked key reads the same)
    // A form sent after the session ended: back to the page it was sent from, not saved.
    const res = await app.request('/console/opt-outs', {
      method: 'POST',
      headers: { ...s.headers, referer: 'http://notify.example/console/opt-outs?to=ada' },
      body: new URLSearchParams({ _csrf: s.csrf, channel: 'email', to: 'ended@example.com' }),
    });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/login?ended=1&next=%2Fconsole%2Fopt-outs%3Fto%3Dada');
    expect(res.headers.get('set-cookie')).toMatch(/notify_console=;.*Max-Age=0/);
    const login = await (await app.request(res.headers.get('location')!)).text();
    expect(login).toContain('Your session has ended');
    expect(login).toContain('to go back to the page you were on');
    expect((await t.pool.query("SELECT 1 FROM suppressions WHERE recipient = 'ended@example.com'")).rowCount).toBe(0);
  });

  it('refuses a state-changing form without the CSRF token', async () => {
    const s = await signIn('acme');
    const id = await enqueue('acme', { channel: 'webhook', to: 'https://hooks.example.com/x', body: 'secret body text' });
    const refused = await app.request(`/console/notifications/${id}/cancel`, {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({}),
    });
    expect(refused.status).toBe(403);
    const wrong = await app.request(`/console/notifications/${id}/cancel`, {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({ _csrf: 'x'.repeat(s.csrf.length) }),
    });
    expect(wrong.status).toBe(403);
    const ok = await confirmed(s, `/console/notifications/${id}/cancel`, { _csrf: s.csrf });
    expect(ok.status).toBe(303);
    const { rows } = await t.pool.query('SELECT state FROM notifications WHERE id = $1', [id]);
    expect(rows[0].state).toBe('cancelled');
  });

  it("shows one tenant nothing of another's: a 404 page for its ids, none of its rows", async () => {
    const theirs = await enqueue('globex', { channel: 'email', to: 'globex-only@example.com', body: 'x' });
    const s = await signIn('acme');
    const detail = await app.request(`/console/notifications/${theirs}`, { headers: s.headers });
    expect(detail.status).toBe(404);
    expect(await detail.text()).not.toContain('globex-only');
    const byId = await app.request(`/console/notifications?id=${theirs}`, { headers: s.headers });
    expect(byId.status).toBe(404);
    const list = await (await app.request('/console/notifications', { headers: s.headers })).text();
    expect(list).not.toContain('globex-only');
    const retry = await app.request(`/console/notifications/${theirs}/retry`, {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({ _csrf: s.csrf }),
    });
    expect(retry.status).toBe(404);
  });

  it('shows recipients but not bodies unless NOTIFY_CONSOLE_SHOW_CONTENT=1', async () => {
    const id = await enqueue('acme', { channel: 'email', to: 'reader@example.com', subject: 'Private subject', body: 'Private body' });
    const hidden = await (await app.request(`/console/notifications/${id}`, { headers: (await signIn('acme')).headers })).text();
    expect(hidden).toContain('reader@example.com');
    expect(hidden).not.toContain('Private body');
    expect(hidden).not.toContain('Private subject');
    const shown = await (
      await showing.request(`/console/notifications/${id}`, { headers: (await signIn('acme', showing)).headers })
    ).text();
    expect(shown).toContain('Private body');
  });

  it('shows what shapes a delivery: priority, ordering, the scheduled time, the category, the metadata (escaped)', async () => {
    const sendAt = new Date(clock.now().getTime() + 3_600_000).toISOString();
    const id = await enqueue('acme', {
      channel: 'email',
      to: 'shape@example.com',
      body: 'x',
      priority: 'high',
      ordering: 'strict',
      send_at: sendAt,
      category: 'billing',
      metadata: { order: '<b>42</b>' },
    });
    const page = await (await app.request(`/console/notifications/${id}`, { headers: (await signIn('acme')).headers })).text();
    const dd = (term: string) => new RegExp(`<dt>${term}</dt>\\s*<dd>([\\s\\S]*?)</dd>`).exec(page)?.[1]?.replace(/\\s+/g, ' ').trim();
    expect(dd('Priority and ordering')).toBe('high, strict');
    expect(dd('Scheduled for')).toContain(sendAt.slice(0, 16).replace('T', ' '));
    expect(dd('Category')).toBe('billing');
    expect(dd('Metadata')).toBe('<code>order</code> = &lt;b&gt;42&lt;/b&gt;');
    const plain = await enqueue('acme', { channel: 'email', to: 'plain@example.com', body: 'x' });
    const other = await (await app.request(`/console/notifications/${plain}`, { headers: (await signIn('acme')).headers })).text();
    expect(other).toMatch(/<dt>Metadata<\/dt>\s*<dd>\s*<span class="muted">none<\/span>/);
  });

  it('ends the session at sign-out and when its key is revoked', async () => {
    const s = await signIn('acme');
    const out = await app.request('/console/logout', { method: 'POST', headers: s.headers, body: new URLSearchParams({ _csrf: s.csrf }) });
    expect(out.status).toBe(303);
    expect(out.headers.get('set-cookie')).toMatch(/notify_console=;/);
    expect((await app.request('/console/notifications', { headers: s.headers })).status).toBe(303);
    const again = await signIn('acme');
    await apiKeyRevoke(fromKysely(t.db), { id: keyIds.acme, now: clock.now() });
    expect((await app.request('/console/notifications', { headers: again.headers })).status).toBe(303);
  });

  it('labels every form control and renders every page', async () => {
    const s = await signIn('globex');
    for (const path of ['/console/notifications', '/console/dead', '/console/templates', '/console/opt-outs', '/console/health']) {
      const res = await app.request(path, { headers: s.headers });
      expect(res.status, path).toBe(200);
      const body = await res.text();
      // Every visible input, select and textarea has a <label for> or sits inside a <label>.
      for (const m of body.matchAll(/<(input|select|textarea)\b([^>]*)>/g)) {
        const attrs = m[2]!;
        if (/type="(hidden|submit)"/.test(attrs)) continue;
        const id = /id="([^"]+)"/.exec(attrs)?.[1];
        const before = body.slice(Math.max(0, m.index - 200), m.index);
        expect(
          id
            ? body.includes(`for="${id}"`)
            : /<label>[^<]*$/.test(before) || before.lastIndexOf('<label>') > before.lastIndexOf('</label>'),
          `${path}: ${m[0]}`,
        ).toBe(true);
      }
    }
  });
});

describe('console, error pages without navigation', () => {
  it('a refused form, a form too large and a failure each lead back: to the page the form was on, else the notifications', async () => {
    const s = await signIn('hooli');
    const links = (page: string) =>
      [...page.matchAll(/<main[\s\S]*?<\/main>/g)].flatMap((m) => [...m[0].matchAll(/href="([^"]+)"/g)].map((h) => h[1]));
    const refused = await app.request('/console/opt-outs', {
      method: 'POST',
      headers: { ...s.headers, referer: 'http://notify.example/console/opt-outs?to=ada' },
      body: new URLSearchParams({ _csrf: 'forged', channel: 'email', to: 'ada@example.com' }),
    });
    expect(refused.status).toBe(403);
    const refusedPage = await refused.text();
    expect(refusedPage).toContain('<title>Error: Refused · notify console</title>');
    expect(links(refusedPage)).toEqual(['/console/opt-outs?to=ada']);
    // A Referer off the console (or none) leads to the notifications, never elsewhere.
    for (const referer of ['https://elsewhere.example/console-phish', 'http://notify.example/console/logout', 'not a url']) {
      const page = await (
        await app.request('/console/opt-outs', {
          method: 'POST',
          headers: { ...s.headers, referer },
          body: new URLSearchParams({ _csrf: 'forged' }),
        })
      ).text();
      expect(links(page), referer).toEqual(['/console/notifications']);
    }
    const large = await app.request('/console/templates', {
      method: 'POST',
      headers: { ...s.headers, referer: 'http://notify.example/console/templates' },
      body: new URLSearchParams({ _csrf: s.csrf, name: 'big', channel: 'sms', body: 'x'.repeat(1024 * 1024 + 1) }),
    });
    expect(large.status).toBe(413);
    expect(links(await large.text())).toEqual(['/console/templates']);

    // A failure (the database gone): the page names the request id that finds the log line.
    const broken = createDb({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1, connectionWaitMs: 300 });
    try {
      const failing = createApp({ db: broken, clock, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } } });
      const res = await failing.request('/console/notifications', { headers: { ...s.headers, 'x-request-id': 'req_console500test' } });
      expect(res.status).toBe(500);
      const page = await res.text();
      expect(page).toContain('it has been logged with request id req_console500test.');
      expect(links(page)).toEqual(['/console/notifications']);
    } finally {
      await broken.destroy();
    }
  });
});

describe('console, accessibility in the markup', () => {
  /** The page's <title>, its h1, its tables without a caption or with a header cell without a scope. */
  const outline = (page: string) => ({
    title: /<title>([^<]*)<\/title>/.exec(page)?.[1],
    h1: /<h1>([^<]*)<\/h1>/.exec(page)?.[1],
    uncaptioned: [...page.matchAll(/<table\b[^>]*>\s*(<caption\b)?/g)].filter((m) => !m[1]).length,
    unscoped: [...page.matchAll(/<th\b(?![^>]*\bscope=)[^>]*>/g)].length,
  });

  it('names every page in its title (its h1), captions every table, scopes every header, and skips to a focusable main', async () => {
    const s = await signIn('umbrella');
    const id = await enqueue('umbrella', { channel: 'webhook', to: 'https://hooks.example/a11y', body: '{}' });
    await app.request('/console/templates', {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({ _csrf: s.csrf, name: 'hello', channel: 'sms', body: 'Hi' }),
    });
    const pages: [string, string][] = [
      ['/console/notifications', 'Notifications'],
      [`/console/notifications/${id}`, `Notification ${id}`],
      ['/console/dead', 'Dead notifications'],
      ['/console/templates', 'Templates'],
      ['/console/templates/hello', 'Template hello'],
      ['/console/opt-outs', 'Opt-outs'],
      ['/console/health', 'Pipeline health'],
      ['/console/nowhere', 'Not found'],
    ];
    const titles = new Set<string>();
    for (const [path, h1] of pages) {
      const page = await (await app.request(path, { headers: s.headers })).text();
      expect(outline(page), path).toEqual({ title: `${h1} · notify console`, h1, uncaptioned: 0, unscoped: 0 });
      expect(page, path).toContain('<a class="skip" href="#main">Skip to content</a>');
      expect(page, path).toContain('<main id="main" tabindex="-1">');
      titles.add(outline(page).title!);
    }
    expect(titles.size).toBe(pages.length);
    expect(outline(await (await app.request('/console/login')).text()).title).toBe('Sign in · notify console');
  });

  it('ties a refused form’s error to its field: invalid, described by the error, focused; the title says Error', async () => {
    const s = await signIn('umbrella');
    const bad = await (await app.request('/console/login', { method: 'POST', body: new URLSearchParams({ api_key: 'nk_wrong' }) })).text();
    expect(bad).toMatch(/<input\s+id="api_key"[^>]*aria-invalid="true" aria-describedby="error" autofocus/);
    expect(bad).toContain('<title>Error: Sign in · notify console</title>');
    // A template body that does not parse: the body field, not the others.
    const template = await postForm(s, '/console/templates', { name: 'broken', channel: 'sms', body: 'Hi {{name' });
    expect(invalidFields(template)).toEqual(['t-body']);
    expect(template).toMatch(/<p class="error" role="alert" id="error">body, line 1, column \d+: /);
    // Sample data that is not JSON names its own field.
    const sample = await postForm(s, '/console/templates', { name: 'broken', channel: 'sms', body: 'Hi', sample_data: '{' });
    expect(invalidFields(sample)).toEqual(['t-sample']);
    // An opt-out without a recipient.
    const optOut = await postForm(s, '/console/opt-outs', { channel: 'sms', to: ' ', category: 'promo', reason: 'asked <twice>' });
    expect(invalidFields(optOut)).toEqual(['o-to']);
    // What was typed is still there to correct (WCAG 3.3.7), escaped.
    expect(optOut).toMatch(/<option selected>sms<\/option>/);
    expect(optOut).toMatch(/id="o-category"[^>]*value="promo"/);
    expect(optOut).toMatch(/id="o-reason"[^>]*value="asked &lt;twice&gt;"/);
    // A recipient the channel cannot have (a phone number in the email channel): the rule enqueue applies.
    const before = await t.pool.query('SELECT count(*)::int AS n FROM suppressions');
    const wrongKind = await postForm(s, '/console/opt-outs', { channel: 'email', to: '+14155550100', category: '', reason: '' });
    expect(invalidFields(wrongKind)).toEqual(['o-to']);
    expect(wrongKind).toContain('The recipient must be an email address.');
    expect(wrongKind).toMatch(/id="o-to"[^>]*value="\+14155550100"/);
    expect((await t.pool.query('SELECT count(*)::int AS n FROM suppressions')).rows[0].n).toBe(before.rows[0].n);
  });

  it('describes each chart in words and figures, and names the table that holds them', async () => {
    const s = await signIn('umbrella');
    const page = await (await app.request('/console/health', { headers: s.headers })).text();
    const charts = [...page.matchAll(/<svg\s+role="img"\s+aria-labelledby="([^"]+)"\s+aria-describedby="([^"]+)"/g)];
    expect(charts.length).toBeGreaterThanOrEqual(2);
    for (const [, title, desc] of charts) {
      expect(page).toMatch(new RegExp(`<title id="${title}">[^<]+</title>`));
      expect(page).toMatch(
        new RegExp(`<desc id="${desc}">60 bars, \\d\\d:\\d\\d to \\d\\d:\\d\\d [^<]*In all: [^<]*The figures are in the table`),
      );
    }
  });
});

/** The hidden fields of the first form posting to `action` in `page`, as the browser holds them (entities decoded). */
function hiddenFields(page: string, action: string): Record<string, string> {
  const form = new RegExp(`<form method="post" action="${action}">([\\s\\S]*?)</form>`).exec(page)?.[1] ?? '';
  const unescape = (v: string) =>
    v
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
  return Object.fromEntries(
    [...form.matchAll(/<input\s+type="hidden"\s+name="([^"]+)"\s+value="([^"]*)"/g)].map((m) => [m[1]!, unescape(m[2]!)]),
  );
}

/** A form body as a browser submits it: every line break of every value becomes CRLF (HTML's form-data set). */
const asBrowser = (fields: Record<string, string>) =>
  new URLSearchParams(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, v.replace(/\r\n|\r|\n/g, '\r\n')])));

type Session = Awaited<ReturnType<typeof signIn>>;

/** Posts a form to `action` as a browser would, expecting the confirmation page; returns that page. */
async function interstitial(s: Session, action: string, fields: Record<string, string>): Promise<string> {
  const res = await app.request(action, { method: 'POST', headers: s.headers, body: asBrowser(fields) });
  // Whitespace as a browser shows it: one space for every run.
  const page = (await res.text()).replace(/\s+/g, ' ');
  expect(res.status, page).toBe(200);
  expect(page).toMatch(/<button type="submit" id="confirm">Confirm: /);
  expect(page).toMatch(/<a href="[^"]+" id="back">Back<\/a>/);
  return page;
}

/** Submits the confirmation page's form as a browser would. */
const confirmAgain = (s: Session, action: string, page: string) =>
  app.request(action, { method: 'POST', headers: s.headers, body: asBrowser(hiddenFields(page, action)) });

/** Posts a form to `action`, then confirms on the page that answers it: the action's response. */
const confirmed = async (s: Session, action: string, fields: Record<string, string>) =>
  confirmAgain(s, action, await interstitial(s, action, fields));

/** Posts a form to `action` with the session's CSRF token, as a browser would: the page that answers. */
const postForm = async (s: Session, action: string, fields: Record<string, string>) =>
  (await app.request(action, { method: 'POST', headers: s.headers, body: asBrowser({ _csrf: s.csrf, ...fields }) })).text();

/** The ids of the fields a page marks invalid. */
const invalidFields = (page: string) => [...page.matchAll(/id="([^"]+)"[^>]*aria-invalid="true"/g)].map((m) => m[1]);

describe('console, what an operator found', () => {
  it('bulk-retries a dead group whose error holds a line break, and lists the death before the requeue', async () => {
    const id = await enqueue('globex', { channel: 'webhook', to: 'https://hooks.example.com/nl', body: 'x' });
    await t.pool.query(
      `UPDATE notifications SET state = 'dead', dead_reason = 'permanent', last_error = $2, next_attempt_at = NULL, attempts = 1
        WHERE id = $1`,
      [id, 'template "missing\nsecond line" not found'],
    );
    const s = await signIn('globex');
    const dead = await (await app.request('/console/dead', { headers: s.headers })).text();
    const fields = hiddenFields(dead, '/console/dead/retry');
    expect(Object.keys(fields)).toContain('error');
    const res = await confirmed(s, '/console/dead/retry', fields);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/dead?done=bulk&n=1');
    expect((await t.pool.query('SELECT state FROM notifications WHERE id = $1', [id])).rows[0].state).toBe('queued');
    const detail = await (await app.request(`/console/notifications/${id}`, { headers: s.headers })).text();
    expect(detail).toMatch(/notification\.dead \(permanent\)[\s\S]*notification\.requeued \(manual retry, bulk /);
    // Nothing left to re-queue: the page says so instead of offering to re-queue 0.
    const again = await app.request('/console/dead/retry', { method: 'POST', headers: s.headers, body: asBrowser(fields) });
    expect(again.status).toBe(200);
    expect(await again.text()).toContain('none is dead any more');
  });

  it("a refused template form keeps its 'Activate this version' box as it was, and the form says what unchecked means", async () => {
    const s = await signIn('wayne');
    for (const activate of ['1', undefined]) {
      const res = await app.request('/console/templates', {
        method: 'POST',
        headers: s.headers,
        body: new URLSearchParams({ _csrf: s.csrf, name: 'bad name!', channel: 'sms', body: 'hi', ...(activate ? { activate } : {}) }),
      });
      expect(res.status).toBe(422);
      const box = /<input type="checkbox" id="t-activate" name="activate"[^>]*>/.exec(await res.text())![0];
      expect(box.includes('checked'), `activate=${activate}`).toBe(activate === '1');
    }
    const page = await (await app.request('/console/templates', { headers: s.headers })).text();
    expect(page).toContain('sends its newest version');
  });

  it("a retry's confirmation says when the recipient's opt-out is still in force (it would die suppressed again)", async () => {
    const [id] = await insertNotifications('stark', ['Opted.Out@example.com']);
    await t.pool.query(
      `UPDATE notifications SET state = 'dead', dead_reason = 'suppressed', next_attempt_at = NULL, attempts = 1,
              last_error = 'the recipient opted out of every email message' WHERE id = $1`,
      [id],
    );
    await t.pool.query(
      `INSERT INTO suppressions (tenant_id, channel, recipient, category, reason, created_at) VALUES ('stark', 'email', 'opted.out@example.com', '*', NULL, now())`,
    );
    const s = await signIn('stark');
    const confirm = async () =>
      (
        await (
          await app.request(`/console/notifications/${id}/retry`, {
            method: 'POST',
            headers: s.headers,
            body: new URLSearchParams({ _csrf: s.csrf }),
          })
        ).text()
      ).replace(/\s+/g, ' ');
    expect(await confirm()).toMatch(
      /the recipient's opt-out \(every email message, since .*\) is still in force: it will die as suppressed again/,
    );
    const dead = await (await app.request('/console/dead', { headers: s.headers })).text();
    const group = await (
      await app.request('/console/dead/retry', {
        method: 'POST',
        headers: s.headers,
        body: asBrowser(hiddenFields(dead, '/console/dead/retry')),
      })
    ).text();
    expect(group.replace(/\s+/g, ' ')).toContain('except those whose opt-out is still in force');
    await t.pool.query("DELETE FROM suppressions WHERE tenant_id = 'stark'");
    expect(await confirm()).toContain('the recipient may receive it.');
  });

  it('says when there are more dead groups than it shows, and leads to the others by reason', async () => {
    const ids = await insertNotifications(
      'wayne',
      Array.from({ length: 101 }, (_, i) => `w${i}@example.com`),
    );
    await t.pool.query(
      `UPDATE notifications SET state = 'dead', dead_reason = 'permanent', next_attempt_at = NULL, attempts = 1,
              last_error = 'SMTP 550 mailbox ' || recipient
        WHERE id = ANY($1)`,
      [ids],
    );
    const s = await signIn('wayne');
    const dead = await (await app.request('/console/dead', { headers: s.headers })).text();
    expect(dead.match(/action="\/console\/dead\/retry"/g)).toHaveLength(100);
    const more = /<p class="notice" id="more-groups">([\s\S]*?)<\/p>/.exec(dead)?.[1] ?? '';
    expect(more.replace(/\s+/g, ' ')).toMatch(/The 100 largest of 101 groups\. The others, by reason:/);
    expect(more).toContain('href="/console/notifications?state=dead&amp;dead_reason=permanent"');
    // A tenant with fewer groups gets no such line.
    expect(await (await app.request('/console/dead', { headers: (await signIn('globex')).headers })).text()).not.toContain('more-groups');
  });

  it('bulk-retries the dead group without a last error alone, not every dead notification of its reason', async () => {
    const [none, failed] = await insertNotifications('umbrella', ['none@example.com', 'failed@example.com']);
    await t.pool.query(
      `UPDATE notifications SET state = 'dead', dead_reason = 'exhausted', next_attempt_at = NULL, attempts = 3,
              last_error = CASE WHEN id = $2 THEN 'HTTP 503' END
        WHERE id = ANY($1)`,
      [[none, failed], failed],
    );
    const s = await signIn('umbrella');
    const dead = await (await app.request('/console/dead', { headers: s.headers })).text();
    const forms = [...dead.matchAll(/<form method="post" action="\/console\/dead\/retry">[\s\S]*?<\/form>/g)].map((m) =>
      hiddenFields(m[0], '/console/dead/retry'),
    );
    const noError = forms.find((f) => f.has_error === '0')!;
    const page = await (await app.request('/console/dead/retry', { method: 'POST', headers: s.headers, body: asBrowser(noError) })).text();
    expect(page).toContain('no last error');
    expect(page).toMatch(/<strong id="confirm-count">1<\/strong>/);
    expect((await confirmed(s, '/console/dead/retry', noError)).headers.get('location')).toBe('/console/dead?done=bulk&n=1');
    const states = await t.pool.query<{ id: string; state: string }>('SELECT id, state FROM notifications WHERE id = ANY($1) ORDER BY id', [
      [none, failed],
    ]);
    expect(states.rows).toEqual([
      { id: none, state: 'queued' },
      { id: failed, state: 'dead' },
    ]);
  });

  it('removes an opt-out whose recipient holds a line break', async () => {
    await t.pool.query(
      `INSERT INTO suppressions (tenant_id, channel, recipient, category, reason, created_at) VALUES ('globex', 'webhook', $1, '*', 'r', now())`,
      ['https://hooks.example.com/a\nb'],
    );
    const s = await signIn('globex');
    const list = await (await app.request('/console/opt-outs', { headers: s.headers })).text();
    const res = await confirmed(s, '/console/opt-outs/remove', hiddenFields(list, '/console/opt-outs/remove'));
    expect(res.headers.get('location')).toBe('/console/opt-outs?done=removed');
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM suppressions WHERE tenant_id = 'globex'`)).rows[0].n).toBe(0);
  });

  it('answers U+0000 in a search with a 400 page, not a 500', async () => {
    const s = await signIn('globex');
    const res = await app.request('/console/notifications?to=a%00b', { headers: s.headers });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('cannot be stored');
  });

  it('shows the day "until" names, and refuses a date it cannot use rather than list everything', async () => {
    const id = await enqueue('globex', { channel: 'email', to: 'day@example.com', body: 'x' });
    const day = clock.now().toISOString().slice(0, 10);
    const s = await signIn('globex');
    const same = await (await app.request(`/console/notifications?from=${day}&until=${day}`, { headers: s.headers })).text();
    expect(same).toContain(id);
    for (const [query, field, says] of [
      ['until=2026-02-30', 'f-until', 'until: not a date from 1970 on'],
      ['from=2026-13-45', 'f-from', 'Created from: not a date from 1970 on'],
      ['from=2026-05-02&until=2026-05-01', 'f-until', 'until: before the start'],
    ] as const) {
      const res = await app.request(`/console/notifications?${query}`, { headers: s.headers });
      expect(res.status, query).toBe(422);
      const page = await res.text();
      expect(page, query).toContain(says);
      expect(page, query).not.toContain(id);
      expect(invalidFields(page), query).toEqual([field]);
    }
  });

  it('holds a template version made in the console to the API’s limits', async () => {
    const s = await signIn('globex');
    const create = (fields: Record<string, string>) =>
      app.request('/console/templates', {
        method: 'POST',
        headers: s.headers,
        body: new URLSearchParams({ _csrf: s.csrf, name: 'big', channel: 'email', body: 'hi', ...fields }),
      });
    const long = await create({ body: 'x'.repeat(65_537) });
    expect(long.status).toBe(422);
    expect(await long.text()).toContain('body:');
    expect((await create({ subject: 's'.repeat(999) })).status).toBe(422);
    expect((await create({})).status).toBe(303);
  });

  it('sends no page to be cached, framed or sniffed, and refuses a sign-in posted by another site', async () => {
    const page = await app.request('/console/login');
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    const post = (headers: Record<string, string>) =>
      app.request('http://console.example/console/login', { method: 'POST', headers, body: new URLSearchParams({ api_key: keys.globex }) });
    expect((await post({ 'sec-fetch-site': 'cross-site' })).status).toBe(403);
    expect((await post({ origin: 'http://attacker.example', host: 'console.example' })).status).toBe(403);
    expect((await post({ 'sec-fetch-site': 'same-origin' })).status).toBe(303);
    expect((await post({ origin: 'http://console.example', host: 'console.example' })).status).toBe(303);
  });
});

/** Makes `to` (one a row) of the tenant's queued notifications directly, ids in order from `clock`'s now: their ids. */
async function insertNotifications(tenant: string, to: readonly string[]): Promise<string[]> {
  const ids = to.map(() => {
    clock.advance(1);
    return newNotificationId(clock.now());
  });
  await t.pool.query(
    `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, max_attempts, next_attempt_at, expires_at, created_at, updated_at)
     SELECT id, $1, 'email', recipient, 'hi', 'queued', 3, $3, $3::timestamptz + interval '1 day', $3, $3
       FROM unnest($2::text[], $4::text[]) AS u(id, recipient)`,
    [tenant, ids, clock.now(), to],
  );
  return ids;
}

/** The ids a notification list page shows, in order, and its paging links. */
async function listPage(s: Session, url: string) {
  const body = await (await app.request(url, { headers: s.headers })).text();
  const ids = [...body.matchAll(/<td><a href="\/console\/notifications\/(ntf_[^"]+)">/g)].map((m) => m[1]!);
  const link = (rel: string) => new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(body)?.[1]?.replace(/&amp;/g, '&');
  return { body, ids, newer: link('prev'), older: link('next') };
}

describe('console, confirmations before acting', () => {
  it('cancels only on the confirmation, which says what will happen and holds the CSRF check; a second confirmation does nothing', async () => {
    const s = await signIn('globex');
    const id = await enqueue('globex', { channel: 'email', to: 'confirm-cancel@example.com', body: 'x' });
    const action = `/console/notifications/${id}/cancel`;
    const page = await interstitial(s, action, { _csrf: s.csrf });
    expect(page).toContain('This cancels notification <strong>' + id + '</strong> (email → <strong>confirm-cancel@example.com</strong>)');
    expect(page).toContain(`<a href="/console/notifications/${id}" id="back">Back</a>`);
    const state = async () => (await t.pool.query('SELECT state FROM notifications WHERE id = $1', [id])).rows[0].state as string;
    expect(await state()).toBe('queued');
    const fields = hiddenFields(page, action);
    expect(fields.confirm).toBe('1');
    const noToken = await app.request(action, { method: 'POST', headers: s.headers, body: asBrowser({ ...fields, _csrf: '' }) });
    expect(noToken.status).toBe(403);
    const otherTenant = await signIn('initech');
    const foreign = await app.request(action, {
      method: 'POST',
      headers: otherTenant.headers,
      body: asBrowser({ ...fields, _csrf: otherTenant.csrf }),
    });
    expect(foreign.status).toBe(404);
    expect(await state()).toBe('queued');
    const done = await confirmAgain(s, action, page);
    expect(done.headers.get('location')).toBe(`/console/notifications/${id}?done=cancelled`);
    expect(await state()).toBe('cancelled');
    const twice = await confirmAgain(s, action, page);
    expect(twice.headers.get('location')).toBe(`/console/notifications/${id}?done=stale`);
    const { rows } = await t.pool.query('SELECT count(*)::int AS n FROM notification_actions WHERE notification_id = $1', [id]);
    expect(rows[0].n).toBe(1);
  });

  it('retries once: a repeated confirmation after the notification died again re-queues nothing', async () => {
    const s = await signIn('globex');
    const id = await enqueue('globex', { channel: 'email', to: 'confirm-retry@example.com', body: 'x' });
    const kill = () =>
      t.pool.query(
        `UPDATE notifications SET state = 'dead', dead_reason = 'permanent', last_error = '550 no such user', next_attempt_at = NULL,
                attempts = attempts + 1, updated_at = $2 WHERE id = $1`,
        [id, new Date(clock.now().getTime() + 1000)],
      );
    await kill();
    const action = `/console/notifications/${id}/retry`;
    const page = await interstitial(s, action, { _csrf: s.csrf });
    expect(page).toContain('dead (permanent) after 1 of 3 attempts');
    expect(page).toContain('up to 3 more attempts (the cap becomes 4)');
    expect((await confirmAgain(s, action, page)).headers.get('location')).toBe(`/console/notifications/${id}?done=retried`);
    await kill();
    expect((await confirmAgain(s, action, page)).headers.get('location')).toBe(`/console/notifications/${id}?done=stale`);
    const { rows } = await t.pool.query('SELECT state FROM notifications WHERE id = $1', [id]);
    expect(rows[0].state).toBe('dead');
    // A queued notification is not offered a retry at all.
    const queued = await enqueue('globex', { channel: 'email', to: 'confirm-retry@example.com', body: 'x' });
    const refused = await app.request(`/console/notifications/${queued}/retry`, {
      method: 'POST',
      headers: s.headers,
      body: asBrowser({ _csrf: s.csrf }),
    });
    expect(refused.status).toBe(422);
    expect(await refused.text()).not.toContain('id="confirm"');
  });

  it('bulk-retries a dead group after saying how many, and a repeated confirmation replays instead of re-queueing again', async () => {
    const s = await signIn('initech');
    const group = await insertNotifications('initech', ['bulk-1@example.com', 'bulk-2@example.com', 'bulk-3@example.com']);
    const kill = (ids: string[]) =>
      t.pool.query(
        `UPDATE notifications SET state = 'dead', dead_reason = 'permanent', last_error = 'mailbox <full>', next_attempt_at = NULL,
                attempts = attempts + 1 WHERE id = ANY ($1)`,
        [ids],
      );
    await kill(group);
    // One of them has expired: it stays dead, and the page says so.
    await t.pool.query(`UPDATE notifications SET expires_at = $2 WHERE id = $1`, [group[0], clock.now()]);
    const dead = await (await app.request('/console/dead', { headers: s.headers })).text();
    const page = await interstitial(s, '/console/dead/retry', hiddenFields(dead, '/console/dead/retry'));
    expect(page).toContain(
      'This re-queues <strong id="confirm-count">2</strong> dead notifications of the group: reason <strong>permanent</strong>, last error starting <q>mailbox &lt;full&gt;</q>.',
    );
    expect(page).toContain('1 of the group have expired and stay dead.');
    const states = async () =>
      (await t.pool.query('SELECT state FROM notifications WHERE id = ANY ($1) ORDER BY id', [group])).rows.map((r) => r.state);
    expect(await states()).toEqual(['dead', 'dead', 'dead']);
    expect((await confirmAgain(s, '/console/dead/retry', page)).headers.get('location')).toBe('/console/dead?done=bulk&n=2');
    expect(await states()).toEqual(['dead', 'queued', 'queued']);
    await kill(group.slice(1));
    const again = await confirmAgain(s, '/console/dead/retry', page);
    expect(again.headers.get('location')).toBe('/console/dead?done=bulk-again&n=2');
    expect(await states()).toEqual(['dead', 'dead', 'dead']);
  });

  it('removes an opt-out only as confirmed: not one recorded again since', async () => {
    const s = await signIn('initech');
    const add = () =>
      app.request('/console/opt-outs', {
        method: 'POST',
        headers: s.headers,
        body: new URLSearchParams({ _csrf: s.csrf, channel: 'email', to: 'Gone&x@Example.com', reason: 'asked' }),
      });
    await add();
    const list = await (await app.request('/console/opt-outs', { headers: s.headers })).text();
    const page = await interstitial(s, '/console/opt-outs/remove', hiddenFields(list, '/console/opt-outs/remove'));
    expect(page).toContain('This removes the opt-out of <strong>gone&amp;x@example.com</strong> on email, every category');
    const count = async () =>
      (await t.pool.query(`SELECT count(*)::int AS n FROM suppressions WHERE tenant_id = 'initech'`)).rows[0].n as number;
    expect(await count()).toBe(1);
    expect((await confirmAgain(s, '/console/opt-outs/remove', page)).headers.get('location')).toBe('/console/opt-outs?done=removed');
    expect(await count()).toBe(0);
    clock.advance(1000);
    await add();
    expect((await confirmAgain(s, '/console/opt-outs/remove', page)).headers.get('location')).toBe('/console/opt-outs?done=stale');
    expect(await count()).toBe(1);
    await t.pool.query(`DELETE FROM suppressions WHERE tenant_id = 'initech'`);
  });

  it('activates a template version after a confirmation, once', async () => {
    const s = await signIn('initech');
    for (const body of ['one', 'two'])
      await app.request('/console/templates', {
        method: 'POST',
        headers: s.headers,
        body: new URLSearchParams({ _csrf: s.csrf, name: 'act', channel: 'sms', body }),
      });
    const action = '/console/templates/act/activate';
    const page = await interstitial(s, action, { _csrf: s.csrf, version: '1' });
    expect(page).toContain('This makes version <strong>1</strong> of template <strong>act</strong> the active one, instead of version 2.');
    const active = async () =>
      (await t.pool.query(`SELECT version FROM template_activations WHERE tenant_id = 'initech' AND name = 'act'`)).rows[0]?.version as
        number | undefined;
    expect(await active()).toBeUndefined();
    expect((await confirmAgain(s, action, page)).headers.get('location')).toBe('/console/templates/act?done=activated');
    expect(await active()).toBe(1);
    // Someone else activates version 2 again (through its own confirmation).
    clock.advance(1000);
    await confirmed(s, action, { _csrf: s.csrf, version: '2' });
    expect(await active()).toBe(2);
    expect((await confirmAgain(s, action, page)).headers.get('location')).toBe('/console/templates/act?done=stale');
    expect(await active()).toBe(2);
  });
});

describe("console, a dead group's own list", () => {
  /** The notification ids a list page shows, in its order. */
  const listed = (page: string) => [...page.matchAll(/<td><a href="\/console\/notifications\/(ntf_\w+)">/g)].map((m) => m[1]!);
  const unescape = (v: string) =>
    v
      .replace(/&amp;/g, '&')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'");

  it("links each group's count to a list of exactly its notifications: same tenant, reason and error start, or none", async () => {
    // Two errors, one the start of the other, with a line break and characters a URL or HTML would
    // take for syntax; a group without an error; the same group in another tenant.
    const error = 'HTTP 410 <Gone>\nsecond line & 50% +more';
    const ids = await insertNotifications('hooli', ['a@example.com', 'b@example.com', 'c@example.com', 'd@example.com', 'e@example.com']);
    const [gone1, gone2, goneLonger, none, queued] = ids as [string, string, string, string, string];
    const [theirs] = await insertNotifications('globex', ['theirs@example.com']);
    const kill = (id: string, reason: string, lastError: string | null) =>
      t.pool.query(
        `UPDATE notifications SET state = 'dead', dead_reason = $2, last_error = $3, next_attempt_at = NULL, attempts = 1 WHERE id = $1`,
        [id, reason, lastError],
      );
    await kill(gone1, 'permanent', error);
    await kill(gone2, 'permanent', error);
    await kill(goneLonger, 'permanent', `${error}, for good`);
    await kill(none, 'exhausted', null);
    await kill(theirs!, 'permanent', error);
    await t.pool.query('UPDATE notifications SET last_error = $2 WHERE id = $1', [queued, error]);
    const s = await signIn('hooli');
    const dead = await (await app.request('/console/dead', { headers: s.headers })).text();
    const links = [
      ...dead.matchAll(
        /<a href="(\/console\/notifications\?dead_reason=[^"]+)"\s+aria-label="(\d+): list the dead notifications of this group"\s*>(\d+)<\/a/g,
      ),
    ];
    const lists = new Map<string, string[]>();
    for (const [, href, label, count] of links) {
      expect(label).toBe(count);
      const res = await app.request(unescape(href!), { headers: s.headers });
      expect(res.status).toBe(200);
      const page = await res.text();
      expect(listed(page)).toHaveLength(Number(count));
      const q = new URL(unescape(href!), 'http://console').searchParams;
      lists.set(`${q.get('dead_reason')}|${q.get('last_error_prefix') ?? 'none'}`, listed(page));
      expect(page).toContain('The dead notifications of one group of the <a href="/console/dead">dead page</a>');
    }
    expect(Object.fromEntries(lists)).toEqual({
      [`permanent|${error}`]: [gone2, gone1],
      [`permanent|${error}, for good`]: [goneLonger],
      'exhausted|none': [none],
    });
  });

  it('asks for a dead reason before searching by last error, on the field to fill in', async () => {
    const s = await signIn('hooli');
    const res = await app.request('/console/notifications?last_error_prefix=HTTP+410', { headers: s.headers });
    expect(res.status).toBe(422);
    const page = await res.text();
    expect(invalidFields(page)).toEqual(['f-dead-reason']);
    expect(page).toContain('Last error: needs a dead reason (dead_reason): it selects among the dead notifications of one reason.');
    expect(page).toMatch(/id="f-last-error" name="last_error_prefix" value="HTTP 410"/);
    expect(listed(page)).toEqual([]);
    const contradiction = await app.request('/console/notifications?dead_reason=permanent&state=queued', { headers: s.headers });
    expect(contradiction.status).toBe(422);
    expect(invalidFields(await contradiction.text())).toEqual(['f-state']);
  });
});

describe('console, paging both ways and searching recipients', () => {
  it('pages notifications newer and older by keyset, with no Newer link on the newest page, stable under inserts', async () => {
    const s = await signIn('initech');
    await t.pool.query(`DELETE FROM notifications WHERE tenant_id = 'initech'`);
    const ids = (
      await insertNotifications(
        'initech',
        Array.from({ length: 120 }, (_, i) => `page-${i}@example.com`),
      )
    ).reverse();
    const first = await listPage(s, '/console/notifications');
    expect(first.ids).toEqual(ids.slice(0, 50));
    expect(first.newer).toBeUndefined();
    const second = await listPage(s, first.older!);
    expect(second.ids).toEqual(ids.slice(50, 100));
    const last = await listPage(s, second.older!);
    expect(last.ids).toEqual(ids.slice(100));
    expect(last.older).toBeUndefined();
    expect((await listPage(s, last.newer!)).ids).toEqual(ids.slice(50, 100));
    // Newer than the second page is the first page: the list's own URL, with no Newer link.
    expect((await app.request(second.newer!, { headers: s.headers })).headers.get('location')).toBe('/console/notifications');
    expect(first.older).toBeDefined();
    // Five newer arrive: the pages already shown keep their rows, and the newest page now has a newer one.
    const fresh = (
      await insertNotifications('initech', [
        'new-0@example.com',
        'new-1@example.com',
        'new-2@example.com',
        'new-3@example.com',
        'new-4@example.com',
      ])
    ).reverse();
    expect((await listPage(s, second.older!)).ids).toEqual(ids.slice(100));
    const up = await listPage(s, second.newer!);
    expect(up.ids).toEqual(ids.slice(0, 50));
    expect(up.newer).toBeDefined();
    // Newer than the newest page shown: the first page again, whole.
    const top = await app.request(up.newer!, { headers: s.headers });
    expect(top.headers.get('location')).toBe('/console/notifications');
    expect((await listPage(s, '/console/notifications')).ids).toEqual([...fresh, ...ids.slice(0, 45)]);
    // The filter travels with the links.
    const filtered = await listPage(s, '/console/notifications?state=queued');
    expect(filtered.ids).toEqual([...fresh, ...ids.slice(0, 45)]);
    const next = await listPage(s, filtered.older!);
    expect(filtered.older).toContain('state=queued');
    expect(next.ids).toEqual(ids.slice(45, 95));
    expect((await listPage(s, '/console/notifications?to=page-1%40example.com&state=queued')).ids).toEqual([ids[118]]);
  });

  it('finds notifications by the exact recipient, as stored', async () => {
    const s = await signIn('initech');
    const [upper] = await insertNotifications('initech', ['Ada.Lovelace@Example.com', 'ada.lovelace@example.com', 'a%b@example.com']);
    const found = async (to: string) => (await listPage(s, `/console/notifications?to=${encodeURIComponent(to)}`)).ids.sort();
    expect(await found('Ada.Lovelace@Example.com')).toEqual([upper]);
    expect(await found('Ada.L')).toEqual([]);
    expect(await found('a%')).toEqual([]);
    const page = (await listPage(s, '/console/notifications?to=%3Cb%3E')).body;
    expect(page).toContain('value="&lt;b&gt;"');
    expect(page).toContain('Recipient (exact)');
  });

  it('searches and pages opt-outs both ways', async () => {
    const s = await signIn('initech');
    await t.pool.query(
      `INSERT INTO suppressions (tenant_id, channel, recipient, category, reason, created_at)
       SELECT 'initech', 'email', 'user' || lpad(g::text, 3, '0') || '@example.com', '*', NULL, now() FROM generate_series(1, 110) AS g`,
    );
    await t.pool.query(
      `INSERT INTO suppressions (tenant_id, channel, recipient, category, created_at) VALUES ('initech', 'sms', '+15550001', '*', now())`,
    );
    const rows = async (url: string) => {
      const body = await (await app.request(url, { headers: s.headers })).text();
      const link = (rel: string) => new RegExp(`<a href="([^"]+)" rel="${rel}">`).exec(body)?.[1]?.replace(/&amp;/g, '&');
      return {
        to: [...body.matchAll(/<td(?: class="wrap")?>(user\d+@example\.com|\+\d+)<\/td>/g)].map((m) => m[1]!),
        next: link('next'),
        previous: link('prev'),
      };
    };
    const first = await rows('/console/opt-outs');
    expect(first.to[0]).toBe('user001@example.com');
    expect(first.previous).toBeUndefined();
    const second = await rows(first.next!);
    expect(second.to[0]).toBe('user051@example.com');
    const third = await rows(second.next!);
    expect(third.to).toEqual([...Array.from({ length: 10 }, (_, i) => `user${101 + i}@example.com`), '+15550001']);
    expect(third.next).toBeUndefined();
    const back = await rows(third.previous!);
    expect(back.to).toEqual(second.to);
    const top = await app.request(back.previous!, { headers: s.headers });
    expect(top.headers.get('location')).toBe('/console/opt-outs');
    const search = await rows('/console/opt-outs?to=USER10');
    expect(search.to).toEqual(
      Array.from({ length: 10 }, (_, i) => `user10${i}@example.com`)
        .concat(['user110@example.com'])
        .filter((x) => x.startsWith('user10')),
    );
    expect(search.next).toBeUndefined();
    await t.pool.query(`DELETE FROM suppressions WHERE tenant_id = 'initech'`);
  });
});

describe('console, template form and preview', () => {
  it('refuses a version of another channel with 409 and says which, keeping the form', async () => {
    const s = await signIn('initech');
    const post = (channel: string, body: string) =>
      app.request('/console/templates', {
        method: 'POST',
        headers: s.headers,
        body: new URLSearchParams({ _csrf: s.csrf, name: 'switch', channel, body }),
      });
    expect((await post('email', 'Hi')).status).toBe(303);
    const refused = await post('sms', 'Hi by text');
    expect(refused.status).toBe(409);
    const page = await refused.text();
    expect(page).toMatch(/email/);
    expect(page).toContain('Hi by text');
    const { rows } = await t.pool.query(`SELECT channel FROM templates WHERE tenant_id = 'initech' AND name = 'switch'`);
    expect(rows).toEqual([{ channel: 'email' }]);
  });

  it('keeps what was typed after a preview (escaped), and takes and previews an HTML body', async () => {
    const s = await signIn('initech');
    const created = await app.request('/console/templates', {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({
        _csrf: s.csrf,
        name: 'html',
        channel: 'email',
        subject: 'Hi {{name}}',
        body: 'Hello {{name}}',
        html_body: '<p>Hello {{name}}</p>',
        sample_data: '{"name":"Ada"}',
      }),
    });
    expect(created.status).toBe(303);
    const { rows } = await t.pool.query(`SELECT html_body FROM templates WHERE tenant_id = 'initech' AND name = 'html'`);
    expect(rows[0].html_body).toBe('<p>Hello {{name}}</p>');
    await app.request('/console/templates', {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({ _csrf: s.csrf, name: 'html', channel: 'email', body: 'v2 {{name}}', sample_data: '{"name":"B"}' }),
    });
    const data = '{"name":"<i>Grace</i> & \\"co\\""}';
    const res = await app.request('/console/templates/html/preview', {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({ _csrf: s.csrf, version: '1', data }),
    });
    const page = await res.text();
    expect(res.status).toBe(200);
    expect(page).toContain('<option value="1" selected>1</option>');
    expect(page).not.toMatch(/<option value="2" selected/);
    expect(page).toContain(
      `<textarea id="p-data" name="data" >{&quot;name&quot;:&quot;&lt;i&gt;Grace&lt;/i&gt; &amp; \\&quot;co\\&quot;&quot;}</textarea>`,
    );
    expect(page).toContain('<pre id="preview-body">Hello &lt;i&gt;Grace&lt;/i&gt; &amp; &quot;co&quot;</pre>');
    // The HTML body renders values HTML-escaped, and the page shows that source escaped once more.
    expect(page).toContain(
      '<pre id="preview-html">&lt;p&gt;Hello &amp;lt;i&amp;gt;Grace&amp;lt;&amp;#x2F;i&amp;gt; &amp;amp; &amp;quot;co&amp;quot;&lt;/p&gt;</pre>',
    );
    // A preview that fails keeps the values too.
    const bad = await (
      await app.request('/console/templates/html/preview', {
        method: 'POST',
        headers: s.headers,
        body: new URLSearchParams({ _csrf: s.csrf, version: '1', data: '{"x":' }),
      })
    ).text();
    // The field is marked invalid, described by the error, and takes the focus.
    expect(bad).toContain(
      '<textarea id="p-data" name="data" aria-invalid="true" aria-describedby="error" autofocus>{&quot;x&quot;:</textarea>',
    );
    expect(bad).toMatch(/<p class="error" role="alert" id="error">data is not JSON<\/p>/);
    expect(bad).toContain('<title>Error: Template html · notify console</title>');
    const form = await (await app.request('/console/templates', { headers: s.headers })).text();
    expect(form).toMatch(/<label for="t-html">HTML body/);
  });
});

describe('console, recipient search plans', () => {
  it('reads the exact recipient of notifications, and a prefix of the lower-cased recipient of opt-outs (migration 0330), as index ranges', async () => {
    const own = await createTestDatabase();
    try {
      await own.pool.query(
        `INSERT INTO notifications (id, tenant_id, channel, recipient, body, state, max_attempts, next_attempt_at, expires_at, created_at, updated_at)
         SELECT 'ntf_' || lpad(g::text, 22, '0'), 'acme', 'email', CASE WHEN g % 2 = 0 THEN 'User' ELSE 'user' END || (g % 2000) || '@Example.com',
                'hi', 'queued', 3, now(), now() + interval '1 day', now(), now()
           FROM generate_series(1, 30000) AS g`,
      );
      await own.pool.query(
        `INSERT INTO suppressions (tenant_id, channel, recipient, category, created_at)
         SELECT 'acme', (ARRAY['email', 'sms', 'webhook'])[1 + g % 3], 'user' || g || '@example.com', '*', now() FROM generate_series(1, 30000) AS g`,
      );
      await own.pool.query('VACUUM ANALYZE notifications, suppressions');
      const planOf = async (run: Parameters<typeof recordStatements>[0]) => {
        const [first] = await recordStatements(run);
        return explain(own.pool, first!.text, first!.values);
      };
      const notifications = await planOf((db) =>
        notificationPage(db, { tenantId: 'acme', filter: { recipient: 'user123@Example.com' }, limit: 50 }),
      );
      expect(notifications).toContain('notifications_tenant_recipient_asc_idx');
      expect(notifications).not.toContain('Seq Scan');
      const optOuts = await planOf((db) => optOutPage(db, { tenantId: 'acme', recipientPrefix: 'USER123', limit: 50 }));
      expect(optOuts).toContain('suppressions_tenant_lower_recipient_idx');
      expect(optOuts).not.toContain('Seq Scan');
    } finally {
      await own.close();
    }
  });
});

/** Stores an endpoint as the dispatchers' gate would have left it (`state` with the columns its CHECKs tie to it). */
async function storeEndpoint(
  tenant: string,
  channel: Channel,
  origin: string,
  state: 'ok' | 'open' | 'disabled',
  opts: { provider?: 'primary' | 'fallback'; probeAt?: Date } = {},
): Promise<string> {
  const id = endpointId({ tenantId: tenant, channel, origin });
  const now = clock.now();
  const since = new Date(now.getTime() - 600_000);
  await t.pool.query(
    `INSERT INTO endpoints (id, tenant_id, channel, origin, provider, state, consecutive_failures, failing_since, last_error_code,
                            last_failure_at, opened_at, probe_at, disabled_at, disabled_by)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, consecutive_failures = EXCLUDED.consecutive_failures,
       failing_since = EXCLUDED.failing_since, last_error_code = EXCLUDED.last_error_code, opened_at = EXCLUDED.opened_at,
       probe_at = EXCLUDED.probe_at, disabled_at = EXCLUDED.disabled_at, disabled_by = EXCLUDED.disabled_by`,
    [
      id,
      tenant,
      channel,
      origin,
      opts.provider ?? 'primary',
      state,
      state === 'ok' ? 0 : 7,
      state === 'ok' ? null : since,
      state === 'ok' ? null : '503',
      state === 'ok' ? null : now,
      state === 'open' ? since : null,
      state === 'open' ? (opts.probeAt ?? new Date(now.getTime() + 30_000)) : null,
      state === 'disabled' ? now : null,
      state === 'disabled' ? 'auto' : null,
    ],
  );
  return id;
}

/** About the text a browser shows of some markup: tags gone, every run of whitespace one space, none inside brackets or before punctuation. */
const words = (markup: string) =>
  markup
    .replace(/<[^>]+>/g, ' ')
    .replace(/&#39;/g, "'")
    .replace(/\s+/g, ' ')
    .replace(/ ([;:,.)])/g, '$1')
    .replace(/\( /g, '(');

describe('console, endpoints that are not delivering (open circuit, disabled)', () => {
  it("the health page lists the tenant's open and disabled endpoints, or says all are ok, or that there are none", async () => {
    const s = await signIn('tyrell');
    const section = async () => {
      const page = await (await app.request('/console/health', { headers: s.headers })).text();
      return { page, text: words(/<h2 id="endpoints">[\s\S]*?(?=<h2>Outbox)/.exec(page)?.[0] ?? '') };
    };
    expect((await section()).text).toContain('This tenant has no endpoints yet');
    await storeEndpoint('tyrell', 'webhook', 'https://fine.example:443', 'ok');
    expect((await section()).text).toContain("All of this tenant's endpoints are ok: no circuit is open and none is disabled.");
    // Another tenant's broken endpoint is not this tenant's concern.
    await storeEndpoint('cyberdyne', 'webhook', 'https://cyberdyne-only.example:443', 'disabled');
    expect((await section()).page).not.toContain('cyberdyne-only');

    const probeAt = new Date(clock.now().getTime() + 45_000);
    const open = await storeEndpoint('tyrell', 'webhook', 'https://flaky.example:443', 'open', { probeAt });
    const disabled = await storeEndpoint('tyrell', 'email', 'smtp://mx.example:25', 'disabled');
    const { page, text } = await section();
    expect(text).toContain('2 endpoints not delivering');
    expect(page).toContain('<caption id="endpoints-not-ok-caption"');
    const row = (id: string) => words(new RegExp(`<tr id="${id}">([\\s\\S]*?)</tr>`).exec(page)?.[1] ?? '');
    expect(row(open)).toMatch(
      new RegExp(
        `^ https://flaky\\.example:443 webhook circuit open ${iso(clock.now().getTime() - 600_000)} 7 failures in a row, last 503 a probe goes at ${iso(probeAt.getTime())}; deliveries resume when one succeeds Enable Disable $`,
      ),
    );
    expect(row(disabled)).toMatch(
      /^ smtp:\/\/mx\.example:25 email disabled .* \(automatically, after failing since .*\) 7 failures in a row, last 503 when an operator enables it Enable $/,
    );
    expect(page).toMatch(new RegExp(`<th scope="row" class="wrap">https://flaky.example:443</th>`));
    expect(page).not.toContain('https://fine.example');
  });

  it("a notification's page says when its endpoint's circuit is open or it is disabled, and what that means for it", async () => {
    const detail = async (id: string, on = app) => {
      const page = await (await on.request(`/console/notifications/${id}`, { headers: (await signIn('tyrell', on)).headers })).text();
      const dd = /<dd id="endpoint-state"[^>]*>([\s\S]*?)<\/dd>/.exec(page);
      return { page, endpoint: dd ? words(dd[1]!) : undefined };
    };
    // Open: a queued notification waits for the probe, without spending an attempt.
    const probeAt = new Date(clock.now().getTime() + 45_000);
    const open = await storeEndpoint('tyrell', 'webhook', 'https://flaky.example:443', 'open', { probeAt });
    const waiting = await enqueue('tyrell', { channel: 'webhook', to: 'https://flaky.example/hooks/customer-x?sig=1', body: '{}' });
    const w = await detail(waiting);
    expect(w.endpoint).toContain('circuit open https://flaky.example:443 since');
    expect(w.endpoint).toContain(
      `Waiting: while the circuit is open its attempts are put off without spending one; the next probe goes at ${iso(probeAt.getTime())}, and it is delivered once a probe succeeds`,
    );
    expect(w.page).toContain(`<a href="/console/health#${open}">https://flaky.example:443</a>`);
    // Right after the state, before the rest.
    expect(w.page.indexOf('id="endpoint-state"')).toBeLessThan(w.page.indexOf('<dt>Channel and recipient</dt>'));
    // Disabled: it will end dead at its next attempt unless enabled; a dead one would die again.
    await storeEndpoint('tyrell', 'webhook', 'https://gone.example:443', 'disabled');
    const paused = await enqueue('tyrell', { channel: 'webhook', to: 'https://gone.example/x', body: '{}' });
    expect((await detail(paused)).endpoint).toMatch(
      /^ disabled https:\/\/gone\.example:443 since .* Paused: at its next attempt \(.*\) it ends dead \(endpoint_disabled\) without being sent, unless an operator enables the endpoint first\. $/,
    );
    await t.pool.query(
      `UPDATE notifications SET state = 'dead', dead_reason = 'endpoint_disabled', next_attempt_at = NULL, attempts = 1 WHERE id = $1`,
      [paused],
    );
    expect((await detail(paused)).endpoint).toContain(
      'A retry would end dead again (endpoint_disabled) unless the endpoint is enabled first.',
    );
    // An endpoint that is ok, or another tenant's broken one on the same origin, says nothing.
    await storeEndpoint('tyrell', 'webhook', 'https://fine.example:443', 'ok');
    expect(
      (await detail(await enqueue('tyrell', { channel: 'webhook', to: 'https://fine.example/x', body: '{}' }))).endpoint,
    ).toBeUndefined();
    await storeEndpoint('cyberdyne', 'webhook', 'https://shared.example:443', 'disabled');
    expect(
      (await detail(await enqueue('tyrell', { channel: 'webhook', to: 'https://shared.example/x', body: '{}' }))).endpoint,
    ).toBeUndefined();
  });

  it('an email notification follows the provider, then its fallback, as the dispatcher tries them', async () => {
    const detail = async (id: string) => {
      const page = await (
        await withOrigins.request(`/console/notifications/${id}`, { headers: (await signIn('cyberdyne', withOrigins)).headers })
      ).text();
      const dd = /<dd id="endpoint-state"[^>]*>([\s\S]*?)<\/dd>/.exec(page);
      return dd ? words(dd[1]!) : undefined;
    };
    const id = await enqueue('cyberdyne', { channel: 'email', to: 'ada@example.com', body: 'x' });
    expect(await detail(id)).toBeUndefined();
    await storeEndpoint('cyberdyne', 'email', 'smtp://mx.example:25', 'open');
    // The fallback has no row yet (never answered): it admits, so the notification goes there.
    expect(await detail(id)).toContain('circuit open smtp://mx.example:25 since');
    expect(await detail(id)).toContain('Its attempts go to the fallback, smtp://mx2.example:25, meanwhile.');
    await storeEndpoint('cyberdyne', 'email', 'smtp://mx2.example:25', 'disabled', { provider: 'fallback' });
    const both = await detail(id);
    expect(both).toContain('disabled smtp://mx2.example:25 (fallback) since');
    expect(both).toContain('Waiting: while the circuit is open its attempts are put off without spending one;');
    // Without the origins (an API started alone) the console cannot know an email's endpoint: it says nothing of it.
    const plain = await (await app.request(`/console/notifications/${id}`, { headers: (await signIn('cyberdyne')).headers })).text();
    expect(plain).not.toContain('id="endpoint-state"');
  });

  it('enables and disables an endpoint after a confirmation, records who did it, and acts on nothing stale or foreign', async () => {
    const s = await signIn('tyrell');
    const id = await storeEndpoint('tyrell', 'webhook', 'https://toggle.example:443', 'open');
    const confirm = await interstitial(s, `/console/endpoints/${id}/enable`, { _csrf: s.csrf });
    expect(words(confirm)).toContain('This enables endpoint https://toggle.example:443 (webhook), circuit open since');
    expect(confirm).toContain(`<a href="/console/health#${id}" id="back">Back</a>`);
    const done = await confirmAgain(s, `/console/endpoints/${id}/enable`, confirm);
    expect(done.status).toBe(303);
    expect(done.headers.get('location')).toBe('/console/health?done=endpoint-enabled#endpoints');
    const row = async () => (await t.pool.query('SELECT state, consecutive_failures FROM endpoints WHERE id = $1', [id])).rows[0];
    expect(await row()).toEqual({ state: 'ok', consecutive_failures: 0 });
    const actions = await t.pool.query('SELECT action, from_state, to_state, api_key_id FROM endpoint_actions WHERE endpoint_id = $1', [
      id,
    ]);
    expect(actions.rows).toEqual([{ action: 'enable', from_state: 'open', to_state: 'ok', api_key_id: expect.stringMatching(/./) }]);
    // A confirmation of a state that has moved on (the circuit opened again, then was shown as open): nothing is done.
    await storeEndpoint('tyrell', 'webhook', 'https://toggle.example:443', 'open');
    const disable = await interstitial(s, `/console/endpoints/${id}/disable`, { _csrf: s.csrf });
    expect(words(disable)).toContain('end dead (endpoint_disabled) at their next attempt');
    await storeEndpoint('tyrell', 'webhook', 'https://toggle.example:443', 'ok');
    const stale = await confirmAgain(s, `/console/endpoints/${id}/disable`, disable);
    expect(stale.headers.get('location')).toBe(`/console/health?done=stale#${id}`);
    expect((await row()).state).toBe('ok');
    // The CSRF token is checked, and another tenant's endpoint is a 404.
    expect(
      (
        await app.request(`/console/endpoints/${id}/disable`, {
          method: 'POST',
          headers: s.headers,
          body: new URLSearchParams({ confirm: '1' }),
        })
      ).status,
    ).toBe(403);
    const theirs = await storeEndpoint('cyberdyne', 'webhook', 'https://theirs.example:443', 'open');
    const foreign = await app.request(`/console/endpoints/${theirs}/enable`, {
      method: 'POST',
      headers: s.headers,
      body: new URLSearchParams({ _csrf: s.csrf, confirm: '1', seen: 'open.' }),
    });
    expect(foreign.status).toBe(404);
    expect((await t.pool.query('SELECT state FROM endpoints WHERE id = $1', [theirs])).rows[0].state).toBe('open');
  });
});

describe("console, the list's next attempt", () => {
  it('shows when a queued notification is next attempted (a scheduled one: its send time), and nothing for a finished one', async () => {
    const s = await signIn('tyrell');
    const due = await enqueue('tyrell', { channel: 'email', to: 'next-due@example.com', body: 'x' });
    const sendAt = new Date(clock.now().getTime() + 7_200_000);
    const scheduled = await enqueue('tyrell', { channel: 'email', to: 'next-due@example.com', body: 'x', send_at: sendAt.toISOString() });
    const sent = await enqueue('tyrell', { channel: 'email', to: 'next-due@example.com', body: 'x' });
    await t.pool.query(`UPDATE notifications SET state = 'sent', sent_at = $2, next_attempt_at = NULL, attempts = 1 WHERE id = $1`, [
      sent,
      clock.now(),
    ]);
    const retrying = await enqueue('tyrell', { channel: 'email', to: 'next-due@example.com', body: 'x' });
    const retryAt = new Date(clock.now().getTime() + 90_000);
    await t.pool.query(`UPDATE notifications SET attempts = 1, next_attempt_at = $2 WHERE id = $1`, [retrying, retryAt]);
    const page = await (await app.request('/console/notifications?to=next-due%40example.com', { headers: s.headers })).text();
    expect(page).toMatch(/<th scope="col">Created<\/th>\s*<th scope="col">Next attempt<\/th>/);
    const cell = (id: string) => {
      const row = new RegExp(`<tr>\\s*<td><a href="/console/notifications/${id}">[\\s\\S]*?</tr>`).exec(page)![0];
      return [...row.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)][6]![1]!.replace(/\s+/g, ' ').trim();
    };
    const dueAt = (await t.pool.query('SELECT next_attempt_at FROM notifications WHERE id = $1', [due])).rows[0].next_attempt_at as Date;
    expect(cell(due)).toBe(`<time datetime="${dueAt.toISOString()}">${iso(dueAt.getTime())}</time>`);
    expect(cell(scheduled)).toBe(`<time datetime="${sendAt.toISOString()}">${iso(sendAt.getTime())}</time> (scheduled)`);
    expect(cell(retrying)).toBe(`<time datetime="${retryAt.toISOString()}">${iso(retryAt.getTime())}</time>`);
    expect(cell(sent)).toBe('');
  });
});

/** An instant as the console writes it in a <time>: `2026-06-01 12:00:00Z`. */
function iso(ms: number): string {
  return new Date(ms)
    .toISOString()
    .replace('T', ' ')
    .replace(/\.\d+Z$/, 'Z');
}
