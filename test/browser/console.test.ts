import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page, type SerializedAXNode } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotificationView, createApp } from '@notify/api';
import { createDb } from '@notify/runtime';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { type NotifyServer, startNotifyProcess } from '../support/notify-process.js';
import { fetchPastShedding, serveFetch } from '../support/http.js';
import { waitFor } from '../support/wait.js';

// The console in a real browser: Debian's Chromium driven by puppeteer-core, against `notify start`
// (api, relay and dispatcher) on the real PostgreSQL and Kafka, delivering to a real local HTTP
// receiver. Each step saves a screenshot under docs/console/. A missing Chromium fails the file:
// .ci/run installs it (apt-get install chromium); nothing here skips.

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/lib/chromium/chromium';
// Screenshots go to .cache/console-screenshots/ so a test run leaves the work tree clean;
// NOTIFY_UPDATE_SCREENSHOTS=1 writes the ones the README and docs/console.md show instead.
const SHOTS = fileURLToPath(
  new URL(process.env.NOTIFY_UPDATE_SCREENSHOTS === '1' ? '../../docs/console/' : '../../.cache/console-screenshots/', import.meta.url),
);
mkdirSync(SHOTS, { recursive: true });
// axe-core, the rules engine run in every page the test visits (WCAG 2.x A/AA, 2.2 AA, best practice).
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const KEYS = { acme: 'console-acme-key-0123456789', globex: 'console-globex-key-0123456789' };

let t: TestDatabase;
let kafka: TestKafka;
let notify: NotifyServer;
let receiver: Server;
let hookBase: string;
/** A second receiver, its own endpoint (origin): it answers 503 to everything, so its circuit opens. */
let failing: Server;
let failingBase: string;
let browser: Browser;
let page: Page;
/** Paths under /gone answer 410 (a permanent failure) while this is true, 200 afterwards. */
let goneAnswers410 = true;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium; .ci/run does) or set CHROMIUM_PATH`,
    );
  }
  [t, kafka] = await Promise.all([createTestDatabase(), createTestKafka()]);
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.url?.startsWith('/gone') && goneAnswers410) res.writeHead(410).end('gone');
      else res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  hookBase = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  failing = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(503).end('unavailable'));
  });
  await new Promise<void>((r) => failing.listen(0, '127.0.0.1', r));
  failingBase = `http://127.0.0.1:${(failing.address() as AddressInfo).port}`;
  notify = await startNotifyProcess([], {
    DATABASE_URL: t.url,
    KAFKA_BROKERS: kafka.brokers.join(','),
    NOTIFY_TOPIC_PREFIX: kafka.prefix,
    NOTIFY_TOPIC_PARTITIONS: '2',
    PORT: '0',
    NOTIFY_ADMIN_PORT: '0',
    NOTIFY_API_KEYS: `acme:${KEYS.acme},globex:${KEYS.globex}`,
    NOTIFY_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
    NOTIFY_MAX_ATTEMPTS: '1',
    NOTIFY_RELAY_POLL_MS: '100',
  });
  browser = await puppeteer.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--headless=new'] });
  page = await browser.newPage();
  // The console's CSP allows no script: axe-core is injected past it (the pages themselves run none).
  await page.setBypassCSP(true);
  await page.setViewport({ width: 1280, height: 900 });
}, 120_000);

afterAll(async () => {
  // Every violation axe found, of any impact, per page (the moderate and minor ones are not failures).
  mkdirSync(fileURLToPath(new URL('../../.cache/', import.meta.url)), { recursive: true });
  writeFileSync(fileURLToPath(new URL('../../.cache/console-axe.json', import.meta.url)), JSON.stringify(audited, null, 2));
  await browser?.close();
  await notify?.stop();
  const topics = (await kafka?.admin.listTopics())?.filter((name) => name.startsWith(`${kafka.prefix}.`)) ?? [];
  if (topics.length > 0) await kafka.admin.deleteTopics({ topics }).catch(() => {});
  await kafka?.close();
  await new Promise((r) => receiver?.close(r));
  await new Promise((r) => failing?.close(r));
  await t?.close();
}, 60_000);

const api = (tenant: keyof typeof KEYS, path: string, init: RequestInit = {}) =>
  fetchPastShedding(`${notify.url}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${KEYS[tenant]}`, 'content-type': 'application/json', ...init.headers },
  });

async function enqueue(tenant: keyof typeof KEYS, to: string): Promise<string> {
  const res = await api(tenant, '/v1/notifications', {
    method: 'POST',
    body: JSON.stringify({ channel: 'webhook', to, body: '{"hello":1}' }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

/** A webhook notification due in an hour, so it stays queued. */
async function enqueueLater(tenant: keyof typeof KEYS, to: string): Promise<string> {
  const res = await api(tenant, '/v1/notifications', {
    method: 'POST',
    body: JSON.stringify({ channel: 'webhook', to, body: '{}', send_at: new Date(Date.now() + 3_600_000).toISOString() }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { id: string }).id;
}

async function waitForState(id: string, state: string) {
  return waitFor(
    async () => {
      const n = NotificationView.parse(await (await api('acme', `/v1/notifications/${id}`)).json());
      return n.state === state ? n : undefined;
    },
    { timeoutMs: 30_000, intervalMs: 100, message: `${id} to be ${state}` },
  );
}

const shot = (name: string) => page.screenshot({ path: `${SHOTS}${name}.png`, fullPage: true });
const text = (selector: string) => page.$eval(selector, (el) => (el as unknown as { innerText: string }).innerText);
// Evaluated in the page (a string, so this file needs no DOM types).
const activeId = () => page.evaluate('document.activeElement && document.activeElement.id');

async function submit(selector: string) {
  await Promise.all([page.waitForNavigation(), page.click(selector)]);
}

interface AxeViolation {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly nodes: readonly string[];
}
const audited: { page: string; violations: AxeViolation[] }[] = [];

/**
 * Checks the page in the browser: axe-core finds no violation of impact serious or critical; its
 * title names the page (its h1, "Error: " first when it shows one); every table has a caption and
 * every header cell a scope. Soft assertions: one run lists every page that fails.
 */
async function checkPage(name: string) {
  await page.addScriptTag({ path: AXE });
  const violations = (await page.evaluate(
    `axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`,
  )) as AxeViolation[];
  audited.push({ page: name, violations });
  expect
    .soft(
      violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.help} (${v.nodes.join(', ')})`),
      `axe, ${name}`,
    )
    .toEqual([]);
  const title = (await page.evaluate(
    `(document.querySelector('.error') ? 'Error: ' : '') + document.querySelector('h1').innerText + ' · notify console'`,
  )) as string;
  expect.soft(await page.title(), `title, ${name}`).toBe(title);
  expect
    .soft(
      await page.evaluate(
        `[...document.querySelectorAll('table')].filter((t) => !t.caption || !t.caption.textContent.trim()).length +
         [...document.querySelectorAll('th')].filter((th) => !th.getAttribute('scope')).length`,
      ),
      `tables without a caption, header cells without a scope, ${name}`,
    )
    .toBe(0);
}

/** The field the page's error is about: invalid, described by the error, and focused (so a screen reader reads both). */
async function expectFieldError(selector: string, says: RegExp) {
  const field = await page.$eval(selector, (el) => ({
    invalid: el.getAttribute('aria-invalid'),
    describedBy: el.getAttribute('aria-describedby'),
  }));
  expect(field.invalid, selector).toBe('true');
  expect(field.describedBy, selector).toBeTruthy();
  expect(await text(`#${field.describedBy}`)).toMatch(says);
  expect(await page.$eval(`#${field.describedBy}`, (el) => el.getAttribute('role'))).toBe('alert');
  expect(await page.evaluate(`document.activeElement === document.querySelector(${JSON.stringify(selector)})`), `${selector} focused`).toBe(
    true,
  );
}

/** The focused element: where it is, whether it shows a focus ring, and its place among the page's tabbable elements. */
const focused = () =>
  page.evaluate(`(() => {
    const el = document.activeElement;
    const tabbable = [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex]')]
      .filter((e) => !e.disabled && e.checkVisibility({ contentVisibilityAuto: true }) && e.tabIndex >= 0);
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    return {
      id: el.id, tag: el.tagName, cls: el.className, index: tabbable.indexOf(el), count: tabbable.length,
      order: tabbable.map((e) => e.tagName + (e.id ? '#' + e.id : '') + (e.textContent.trim() ? ' ' + e.textContent.trim().slice(0, 20) : '')),
      ring: st.outlineStyle !== 'none' && parseFloat(st.outlineWidth) >= 2,
      // Not hidden (WCAG 2.2 focus not obscured): some of it on screen, and on top there.
      inView: r.width > 0 && r.height > 0 && r.right > 0 && r.bottom > 0 && r.left < innerWidth && r.top < innerHeight &&
        el.contains(document.elementFromPoint(Math.min(Math.max(r.left + 2, 0), innerWidth - 1), Math.min(Math.max(r.top + 2, 0), innerHeight - 1))),
      rect: [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)].join(' '),
    };
  })()`) as Promise<{
    id: string;
    tag: string;
    cls: string;
    index: number;
    count: number;
    order: string[];
    ring: boolean;
    inView: boolean;
    rect: string;
  }>;

/**
 * Keyboard only, from the top of the page: the first Tab shows the skip link, Enter on it moves
 * focus to main; then Tab visits every control in document order, each in view with a focus ring.
 */
async function checkKeyboard(name: string) {
  await page.keyboard.press('Tab');
  const skip = await focused();
  expect(skip.cls, `${name}: first Tab`).toBe('skip');
  expect(skip.inView, `${name}: skip link shown when focused`).toBe(true);
  await page.keyboard.press('Enter');
  await page.waitForFunction(`location.hash === '#main'`);
  expect(await activeId(), `${name}: focus after the skip link`).toBe('main');
  await page.keyboard.press('Tab');
  let stop = await focused();
  expect(await page.evaluate(`document.querySelector('main').contains(document.activeElement)`), `${name}: first Tab in main`).toBe(true);
  for (let last = stop.index - 1; ;) {
    const where = `${name}: Tab stop ${stop.tag}#${stop.id} (${stop.index} of ${stop.count})`;
    // The next control in document order; a date field takes one Tab for each of its parts.
    expect(
      stop.index === last + 1 || (stop.index === last && stop.tag === 'INPUT'),
      `${where} after ${last}, expected ${stop.order[last + 1]}`,
    ).toBe(true);
    expect(stop.ring, `${where} shows focus`).toBe(true);
    expect(stop.inView, `${where} in view (${stop.rect})`).toBe(true);
    if (stop.index === stop.count - 1) break;
    last = stop.index;
    await page.keyboard.press('Tab');
    stop = await focused();
  }
}

describe('the console in Chromium', () => {
  let deadId: string;
  const recipient = () => `${hookBase}/gone/customer-x`;

  it('1. signs in with the keyboard, finds a notification by recipient and shows its attempts', async () => {
    deadId = await enqueue('acme', recipient());
    await waitForState(deadId, 'dead');
    await page.goto(`${notify.url}/console/login`);
    await shot('01-sign-in');
    await checkPage('sign-in');
    await checkKeyboard('sign-in');
    // Keyboard only: Tab reaches the key field, Enter submits the form.
    for (let i = 0; i < 10 && (await activeId()) !== 'api_key'; i++) await page.keyboard.press('Tab');
    expect(await activeId()).toBe('api_key');
    // A wrong key: the field says so, and keeps the focus.
    await page.keyboard.type('not-a-key');
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    await checkPage('sign-in, wrong key');
    await expectFieldError('#api_key', /not valid/);
    await page.keyboard.type(KEYS.acme);
    await Promise.all([page.waitForNavigation(), page.keyboard.press('Enter')]);
    expect(page.url()).toBe(`${notify.url}/console/notifications`);
    await checkPage('notifications');

    await page.type('#f-to', recipient());
    await submit('form[role=search] button[type=submit]');
    expect(await text('tbody')).toContain(deadId);
    await shot('02-search-by-recipient');
    await checkPage('notifications, by recipient');
    await submit(`a[href="/console/notifications/${deadId}"]`);
    const attempts = await text('main');
    expect(attempts).toContain('permanent');
    expect(attempts).toContain('410');
    await shot('03-notification-attempts');
    await checkPage('notification with attempts');
  });

  it('2. retries a dead notification after a confirmation page, then sees it sent', async () => {
    goneAnswers410 = false;
    await submit(`form[action="/console/notifications/${deadId}/retry"] button`);
    // Nothing happened yet: the page says what would, with Back and Confirm.
    expect(await text('h1')).toBe('Retry this notification?');
    expect(await text('#confirm-summary')).toContain(`This re-queues notification ${deadId} (webhook → ${recipient()}), dead (permanent)`);
    await shot('04a-confirm-retry');
    await checkPage('confirm retry');
    await submit('#back');
    expect(page.url()).toBe(`${notify.url}/console/notifications/${deadId}`);
    expect(await text('.badge')).toBe('dead');
    await submit(`form[action="/console/notifications/${deadId}/retry"] button`);
    await submit('#confirm');
    expect(await text('[role=status]')).toContain('Re-queued');
    await waitForState(deadId, 'sent');
    await page.reload();
    expect(await text('.badge')).toBe('sent');
    await shot('04-retried-and-sent');
    await checkPage('notification, sent');
  });

  it('3. bulk-retries a dead group', async () => {
    goneAnswers410 = true;
    const group = await Promise.all([1, 2, 3].map((i) => enqueue('acme', `${hookBase}/gone/bulk-${i}`)));
    for (const id of group) await waitForState(id, 'dead');
    await page.goto(`${notify.url}/console/dead`);
    expect(await text('tbody')).toContain('3');
    await shot('05-dead-groups');
    await checkPage('dead groups');
    // The group's count opens the group's own list: exactly its three notifications, newest first.
    await submit('#dead-groups a[href^="/console/notifications?dead_reason=permanent"]');
    expect(
      await page.evaluate(`[...document.querySelectorAll('#notifications tbody td:first-child a')].map((a) => a.textContent)`),
    ).toEqual([...group].sort().reverse());
    expect(await text('#dead-group')).toMatch(
      /^The dead notifications of one group of the dead page: reason permanent, last error starting /,
    );
    await checkPage('dead group list');
    await page.goBack();
    goneAnswers410 = false;
    await submit('button[id^=bulk-retry-]');
    expect(await text('#confirm-count')).toBe('3');
    await shot('05a-confirm-bulk-retry');
    await checkPage('confirm bulk retry');
    await submit('#confirm');
    expect(await text('[role=status]')).toContain('(3)');
    for (const id of group) await waitForState(id, 'sent');
    await page.goto(`${notify.url}/console/dead`);
    expect(await text('main')).toContain('No dead notifications');
    await shot('06-dead-after-bulk-retry');
    await checkPage('dead, none');
  });

  it('4. creates and previews a template', async () => {
    await page.goto(`${notify.url}/console/templates`);
    await checkPage('templates, none');
    // A body that does not parse: the field says where, and keeps the focus.
    await page.type('#t-name', 'broken');
    await page.type('#t-body', 'Hello {{name');
    await submit('form[action="/console/templates"] button[type=submit]');
    await checkPage('templates, error');
    await expectFieldError('#t-body', /line 1, column/);
    await page.goto(`${notify.url}/console/templates`);
    await page.type('#t-name', 'welcome');
    await page.select('#t-channel', 'email');
    await page.type('#t-subject', 'Welcome, {{name}}');
    await page.type('#t-body', 'Hello {{name}}, your code is {{code}}.');
    await page.type('#t-html', '<p>Hello <b>{{name}}</b></p>');
    await page.type('#t-sample', '{"name":"Ada","code":"1234"}');
    await submit('form[action="/console/templates"] button[type=submit]');
    expect(page.url()).toBe(`${notify.url}/console/templates/welcome?done=created`);
    await checkPage('template');
    await checkPage('templates');
    const data = '{"name":"<Grace & co>","code":"9876"}';
    await page.type('#p-data', data);
    await submit('form[action="/console/templates/welcome/preview"] button[type=submit]');
    expect(await text('#preview-subject')).toBe('Welcome, <Grace & co>');
    expect(await text('#preview-body')).toBe('Hello <Grace & co>, your code is 9876.');
    // The HTML body's source, its values HTML-escaped, shown as text (not rendered).
    expect(await text('#preview-html')).toBe('<p>Hello <b>&lt;Grace &amp; co&gt;</b></p>');
    // What was typed is still in the form, exactly.
    expect(await page.$eval('#p-data', (el) => (el as unknown as { value: string }).value)).toBe(data);
    expect(await page.$eval('#p-version', (el) => (el as unknown as { value: string }).value)).toBe('1');
    await shot('07-template-preview');
    await checkPage('template preview');
    await page.$eval('#p-data', (el) => {
      (el as unknown as { value: string }).value = '{"name":';
    });
    await submit('form[action="/console/templates/welcome/preview"] button[type=submit]');
    await checkPage('template preview, error');
    await expectFieldError('#p-data', /not JSON/);
    // A second version, so the first has an Activate button and its confirmation.
    await page.goto(`${notify.url}/console/templates`);
    await page.type('#t-name', 'welcome');
    await page.select('#t-channel', 'email');
    await page.type('#t-body', 'Hi {{name}}');
    await page.type('#t-sample', '{"name":"Ada"}');
    await submit('form[action="/console/templates"] button[type=submit]');
    await submit('form[action="/console/templates/welcome/activate"] button');
    expect(await text('h1')).toBe('Activate version 1?');
    await checkPage('confirm activate');
  });

  it('5. adds an opt-out', async () => {
    await page.goto(`${notify.url}/console/opt-outs`);
    await page.select('#o-channel', 'email');
    await page.type('#o-to', 'unsubscribed@example.com');
    await page.type('#o-reason', 'asked by phone');
    await submit('form[action="/console/opt-outs"] button[type=submit]');
    expect(await text('tbody')).toContain('unsubscribed@example.com');
    const stored = await (await api('acme', '/v1/suppressions?channel=email')).json();
    expect(stored).toMatchObject({ data: [expect.objectContaining({ to: 'unsubscribed@example.com', reason: 'asked by phone' })] });
    await shot('08-opt-outs');
    await checkPage('opt-outs');
    // Found by the start of the address, in any case; removed only after a confirmation.
    await page.type('#s-to', 'UNSUB');
    await submit('form[action="/console/opt-outs"][role=search] button[type=submit]');
    expect(await text('tbody')).toContain('unsubscribed@example.com');
    await submit('form[action="/console/opt-outs/remove"] button');
    expect(await text('#confirm-summary')).toContain('This removes the opt-out of unsubscribed@example.com on email, every category');
    await checkPage('confirm remove opt-out');
    await submit('#confirm');
    expect(await text('[role=status]')).toBe('Opt-out removed.');
    expect(await (await api('acme', '/v1/suppressions?channel=email')).json()).toMatchObject({ data: [] });
    await page.goto(`${notify.url}/console/health`);
    expect(await text('#dead-rate')).toMatch(/%$/);
    await shot('09-pipeline-health');
    await checkPage('pipeline health');
    // Each chart has a name and a description saying what it shows, in words and figures.
    const charts = (await page.evaluate(`[...document.querySelectorAll('svg')].map((svg) => {
      const ref = (attr) => (svg.getAttribute(attr) || '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ').trim();
      return { role: svg.getAttribute('role'), name: ref('aria-labelledby'), description: ref('aria-describedby') };
    })`)) as { role: string | null; name: string; description: string }[];
    expect(charts.length).toBeGreaterThanOrEqual(2);
    for (const chart of charts) {
      expect(chart.role).toBe('img');
      expect(chart.name).not.toBe('');
      expect(chart.description).toMatch(/\d/);
    }
  });

  it('5b. fits a 375-px screen, 200 % zoom (640 px) and 400 % (320 px): wide tables scroll inside the page, the page itself does not', async () => {
    const paths = [
      '/console/notifications',
      `/console/notifications/${deadId}`,
      '/console/dead',
      '/console/opt-outs',
      '/console/templates',
      '/console/templates/welcome',
      '/console/health',
    ];
    try {
      // 200 % and 400 % zoom of a 1280-px window: the same CSS pixels as a 640- and a 320-px one.
      for (const width of [640, 320]) {
        await page.setViewport({ width, height: 800 });
        for (const path of paths) {
          await page.goto(`${notify.url}${path}`);
          expect(await page.evaluate('document.documentElement.scrollWidth'), `${path} at ${width} px`).toBeLessThanOrEqual(width);
          // Every scrolling table region can be reached with the keyboard (and axe says nothing else is wrong).
          await checkPage(`${path} at ${width} px`);
        }
      }
      await page.setViewport({ width: 375, height: 800 });
      for (const path of paths) {
        await page.goto(`${notify.url}${path}`);
        expect(await page.evaluate('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(375);
      }
      // A confirmation page, with a long recipient.
      const queued = await enqueueLater('acme', `${hookBase}/a-rather-long-path/that-goes-on/and-on/customer-with-a-long-name`);
      await page.goto(`${notify.url}/console/notifications/${queued}`);
      await submit(`form[action="/console/notifications/${queued}/cancel"] button`);
      expect(await text('h1')).toBe('Cancel this notification?');
      expect(await page.evaluate('document.documentElement.scrollWidth'), 'confirmation').toBeLessThanOrEqual(375);
      await checkPage('confirm cancel at 375 px');
      await submit('#confirm');
      expect(await text('.badge')).toBe('cancelled');
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  it('5e. a long value without a space wraps in its cell at 1280 px: no table scrolls sideways there, no action leaves the view', async () => {
    // An opt-out with a long reason for a long webhook URL: the notification to it dies suppressed.
    const to = `${hookBase}/${'segment-'.repeat(40)}end`;
    const added = await api('acme', '/v1/suppressions', {
      method: 'POST',
      body: JSON.stringify({ channel: 'webhook', to, reason: 'r'.repeat(480) }),
    });
    expect(added.status).toBe(201);
    const id = await enqueue('acme', to);
    await waitForState(id, 'dead');
    for (const path of ['/console/dead', '/console/opt-outs', '/console/notifications', `/console/notifications/${id}`]) {
      await page.goto(`${notify.url}${path}`);
      const overflow = (await page.evaluate(
        `[...document.querySelectorAll('.table')].map((r) => r.scrollWidth - r.clientWidth)`,
      )) as number[];
      expect(Math.max(0, ...overflow), `${path}: how far a table scrolls sideways`).toBe(0);
    }
    await shot('13-long-values');
  });

  it("5f. shows an endpoint's open circuit on its notification and on the health page, disables and enables it there", async () => {
    // Five transient failures in a row (NOTIFY_ENDPOINT_FAILURE_THRESHOLD's default; each notification has one attempt)
    // open the circuit of the failing receiver's origin.
    for (let i = 0; i < 5; i++) await waitForState(await enqueue('acme', `${failingBase}/hooks/customer-y-${i}`), 'dead');
    const endpoint = await waitFor(
      async () => {
        const list = (await (await api('acme', '/v1/endpoints?state=open')).json()) as { data: { id: string; origin: string }[] };
        return list.data.find((e) => e.origin === failingBase);
      },
      { timeoutMs: 30_000, intervalMs: 100, message: 'the failing receiver’s circuit to open' },
    );
    // A notification to it, due in an hour: the page says the circuit is open and what that means for it.
    const waiting = await enqueueLater('acme', `${failingBase}/hooks/customer-y`);
    await page.goto(`${notify.url}/console/notifications/${waiting}`);
    const state = await text('#endpoint-state');
    expect(state).toContain(`circuit open ${failingBase} since`);
    // Probes that failed since it opened add to the streak.
    expect(Number(/(\d+) failures in a row, last 503/.exec(state)?.[1])).toBeGreaterThanOrEqual(5);
    expect(state).toContain('Waiting: while the circuit is open its attempts are put off without spending one');
    // Near the notification's state: the badge just above it.
    const [stateTop, endpointTop] = (await page.evaluate(
      `[document.querySelector('dd .badge'), document.querySelector('#endpoint-state')].map((el) => el.getBoundingClientRect().top)`,
    )) as number[];
    expect(endpointTop! - stateTop!).toBeLessThan(80);
    await shot('14-notification-endpoint-open');
    await checkPage('notification, endpoint circuit open');
    // Its link leads to the endpoint's row on the health page.
    await submit(`#endpoint-state a[href="/console/health#${endpoint.id}"]`);
    expect(await page.evaluate(`document.querySelector(':target')?.id`)).toBe(endpoint.id);
    expect(await text(`tr[id="${endpoint.id}"]`)).toMatch(/circuit open/);
    expect(await text('#endpoints-summary')).toMatch(/^1 endpoint not delivering/);
    await shot('15-health-endpoints');
    await checkPage('pipeline health, an endpoint not delivering');
    // Disable it after a confirmation: the notification would now end dead at its next attempt.
    await submit(`form[action="/console/endpoints/${endpoint.id}/disable"] button`);
    expect(await text('h1')).toBe('Disable this endpoint?');
    await checkPage('confirm disable endpoint');
    await submit('#confirm');
    expect(await text('[role=status]')).toContain('Endpoint disabled');
    expect(await text(`tr[id="${endpoint.id}"]`)).toMatch(/disabled/);
    expect(((await (await api('acme', `/v1/endpoints/${endpoint.id}`)).json()) as { state: string }).state).toBe('disabled');
    await page.goto(`${notify.url}/console/notifications/${waiting}`);
    expect(await text('#endpoint-state')).toContain('Paused: at its next attempt');
    // Enable it: every endpoint is ok again, and the page says so.
    await page.goto(`${notify.url}/console/health`);
    await submit(`form[action="/console/endpoints/${endpoint.id}/enable"] button`);
    await submit('#confirm');
    expect(await text('#endpoints-summary')).toBe("All of this tenant's endpoints are ok: no circuit is open and none is disabled.");
    await page.goto(`${notify.url}/console/notifications/${waiting}`);
    expect(await page.$('#endpoint-state')).toBeNull();

    // The list's next attempt: the scheduled one's send time, nothing for a finished one.
    const sendAt = ((await (await api('acme', `/v1/notifications/${waiting}`)).json()) as { next_attempt_at: string }).next_attempt_at;
    await page.goto(`${notify.url}/console/notifications`);
    const nextCell = (id: string) =>
      page.evaluate(`(() => {
        const row = document.querySelector('#notifications a[href="/console/notifications/${id}"]').closest('tr');
        const i = [...document.querySelectorAll('#notifications thead th')].findIndex((th) => th.textContent.trim() === 'Next attempt');
        const cell = row.cells[i];
        return { text: cell.innerText.trim(), datetime: cell.querySelector('time')?.getAttribute('datetime') ?? null };
      })()`) as Promise<{ text: string; datetime: string | null }>;
    expect(await nextCell(waiting)).toEqual({ text: expect.stringMatching(/ \(scheduled\)$/), datetime: new Date(sendAt).toISOString() });
    expect(await nextCell(deadId)).toEqual({ text: '', datetime: null });
  });

  it('5g. the pipeline charts keep their text readable on a 375-px screen (at least 10 CSS px, inside the chart, no label over another)', async () => {
    try {
      await page.setViewport({ width: 375, height: 800 });
      await page.goto(`${notify.url}/console/health`);
      const charts = (await page.evaluate(`[...document.querySelectorAll('figure')].map((figure) => {
        const svg = figure.querySelector('svg');
        const box = svg.getBoundingClientRect();
        const texts = [...svg.querySelectorAll('text')].map((t) => {
          const r = t.getBoundingClientRect();
          // What the text renders at: its font size times the scale from the SVG's units to CSS pixels.
          return { text: t.textContent, px: parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a,
                   height: r.height, inside: r.left >= box.left - 0.5 && r.right <= box.right + 0.5, left: r.left, right: r.right, top: r.top };
        });
        const legend = [...figure.querySelectorAll('.legend li, figcaption')].map((el) => parseFloat(getComputedStyle(el).fontSize));
        return { id: svg.id || svg.getAttribute('aria-labelledby'), width: box.width, texts, legend };
      })`)) as {
        id: string;
        width: number;
        texts: { text: string; px: number; height: number; inside: boolean; left: number; right: number; top: number }[];
        legend: number[];
      }[];
      expect(charts.length).toBeGreaterThanOrEqual(2);
      for (const chart of charts) {
        expect(chart.width, chart.id).toBeLessThanOrEqual(375);
        expect(chart.texts.length, chart.id).toBeGreaterThan(0);
        for (const t of chart.texts) {
          expect.soft(t.px, `${chart.id}: “${t.text}” rendered size`).toBeGreaterThanOrEqual(10);
          expect.soft(t.height, `${chart.id}: “${t.text}” rendered height`).toBeGreaterThanOrEqual(10);
          expect.soft(t.inside, `${chart.id}: “${t.text}” inside the chart`).toBe(true);
        }
        // Labels on one line do not run into each other.
        const lines = new Map<number, typeof chart.texts>();
        for (const t of chart.texts) lines.set(Math.round(t.top), [...(lines.get(Math.round(t.top)) ?? []), t]);
        for (const line of lines.values()) {
          const sorted = [...line].sort((a, b) => a.left - b.left);
          for (let i = 1; i < sorted.length; i++)
            expect
              .soft(sorted[i]!.left, `${chart.id}: “${sorted[i]!.text}” after “${sorted[i - 1]!.text}”`)
              .toBeGreaterThanOrEqual(sorted[i - 1]!.right);
        }
        for (const px of chart.legend) expect.soft(px, `${chart.id}: legend and caption`).toBeGreaterThanOrEqual(10);
      }
      await shot('16-pipeline-health-375px');
    } finally {
      await page.setViewport({ width: 1280, height: 900 });
    }
  });

  /** The pages 5c walks with the keyboard and 5d reads as a screen reader would: one of each kind. */
  const walked = () => [
    '/console/notifications',
    `/console/notifications/${deadId}`,
    '/console/dead',
    '/console/templates/welcome',
    '/console/opt-outs',
    '/console/health',
  ];

  it('5c. works with the keyboard alone: a skip link first, then every control in order with a visible focus', async () => {
    for (const path of walked()) {
      await page.goto(`${notify.url}${path}`);
      await checkKeyboard(path);
    }
  });

  it("5d. reads as a screen reader would: Chromium's accessibility tree names every landmark, heading, control and table", async () => {
    // What assistive technology is given (no screen reader runs here): the tree Chromium builds.
    const flat = (n: SerializedAXNode | null): SerializedAXNode[] => (n ? [n, ...(n.children ?? []).flatMap(flat)] : []);
    const read = async () => flat(await page.accessibility.snapshot());
    const named = (n: SerializedAXNode) => (n.name ?? '').trim() !== '';
    for (const path of walked()) {
      await page.goto(`${notify.url}${path}`);
      const nodes = await read();
      const h1 = await text('h1');
      expect.soft(nodes.filter((n) => n.role === 'main').length, `${path}: one main`).toBe(1);
      expect
        .soft(
          nodes.filter((n) => n.role === 'navigation').map((n) => n.name),
          `${path}: the console's navigation`,
        )
        .toEqual(['Console']);
      expect
        .soft(
          nodes.filter((n) => n.role === 'heading' && n.level === 1).map((n) => n.name),
          `${path}: one h1`,
        )
        .toEqual([h1]);
      const controls = ['textbox', 'searchbox', 'combobox', 'button', 'link', 'checkbox', 'spinbutton', 'table', 'img'];
      expect.soft(nodes.filter((n) => controls.includes(n.role)).length, `${path}: controls read`).toBeGreaterThan(5);
      const unnamed = nodes.filter((n) => controls.includes(n.role) && !named(n)).map((n) => n.role);
      expect.soft(unnamed, `${path}: controls, tables and images without a name`).toEqual([]);
    }
    // A refused form: the alert is read, and the field it is about says it is invalid and why.
    await page.goto(`${notify.url}/console/opt-outs`);
    await page.select('#o-channel', 'sms');
    await page.type('#o-to', 'not-a-number');
    await submit('form[action="/console/opt-outs"] button[type=submit]');
    const nodes = await read();
    const alert = nodes.find((n) => n.role === 'alert');
    expect(alert).toBeDefined();
    const field = nodes.find((n) => n.role === 'textbox' && n.name === 'Recipient');
    expect(field).toMatchObject({ invalid: 'true', description: expect.stringMatching(/E\.164/) });
  });

  it("6. shows a 404 page for another tenant's id", async () => {
    const theirs = await enqueue('globex', `${hookBase}/globex-only`);
    const res = await page.goto(`${notify.url}/console/notifications/${theirs}`);
    expect(res?.status()).toBe(404);
    expect(await text('h1')).toBe('Not found');
    expect(await text('main')).not.toContain('globex-only');
    await shot('10-other-tenant-404');
    await checkPage('404');
  });

  it('6b. a refused form and a form too large say so and lead back to the page the form was on', async () => {
    // A form whose security token is not the session's (a stale tab after a new sign-in, a forgery).
    await page.goto(`${notify.url}/console/opt-outs`);
    await page.evaluate(`document.querySelector('form[action="/console/opt-outs"] input[name=_csrf]').value = 'forged'`);
    await page.type('#o-to', 'refused@example.com');
    await submit('form[action="/console/opt-outs"] button[type=submit]');
    expect(await text('h1')).toBe('Refused');
    await checkPage('refused form');
    await submit('main a');
    expect(page.url()).toBe(`${notify.url}/console/opt-outs`);
    expect(await (await api('acme', '/v1/suppressions?channel=email&to=refused%40example.com')).json()).toMatchObject({ data: [] });
    // A template body past the console's 1 MiB form limit.
    await page.goto(`${notify.url}/console/templates`);
    await page.type('#t-name', 'huge');
    await page.evaluate(`document.querySelector('#t-body').value = 'x'.repeat(1100000)`);
    const [res] = await Promise.all([page.waitForNavigation(), page.click('form[action="/console/templates"] button[type=submit]')]);
    expect(res?.status()).toBe(413);
    expect(await text('h1')).toBe('Too large');
    await checkPage('form too large');
    await submit('main a');
    expect(page.url()).toBe(`${notify.url}/console/templates`);
  });

  it("6c. a failure's page names the request id of its log line and leads back", async () => {
    // A console whose database does not answer (port 1), served beside the real one: signing in fails there.
    const broken = createDb({ connectionString: 'postgres://postgres@127.0.0.1:1/none', max: 1, connectionWaitMs: 300 });
    const failing = await serveFetch(createApp({ db: broken, config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } } }).fetch);
    try {
      await page.goto(`${failing.url}/console/login`);
      await page.type('#api_key', KEYS.acme);
      const [res] = await Promise.all([page.waitForNavigation(), page.click('form button[type=submit]')]);
      expect(res?.status()).toBe(500);
      expect(await text('h1')).toBe('Something went wrong');
      const reqId = res?.headers()['x-request-id'];
      expect(reqId).toMatch(/^req_/);
      expect(await text('main')).toContain(`it has been logged with request id ${reqId}.`);
      await checkPage('failure');
      await submit('main a');
      expect(page.url()).toBe(`${failing.url}/console/login`);
    } finally {
      await failing.close();
      await broken.destroy();
    }
  });

  it('7. signs out', async () => {
    await page.goto(`${notify.url}/console/notifications`);
    await submit('form[action="/console/logout"] button');
    expect(page.url()).toBe(`${notify.url}/console/login`);
    await page.goto(`${notify.url}/console/notifications`);
    expect(page.url()).toBe(`${notify.url}/console/login?next=%2Fconsole%2Fnotifications`);
    await shot('11-signed-out');
    await checkPage('signed out');
  });
});
