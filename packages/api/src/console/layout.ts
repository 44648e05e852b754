import { html, raw } from 'hono/html';
import type { HtmlEscapedString } from 'hono/utils/html';

/** What a console page renders into. */
export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

// Colours checked for WCAG AA (4.5:1 for text) against their backgrounds:
// text #1b1b1b / #fff 17.1:1; muted #4d4d4d / #fff 8.4:1; links and buttons #0b57d0 / #fff 5.6:1;
// sent #0d5c2e / #e6f4ea 7.0:1; dead #8c1d18 / #fce8e6 7.6:1; queued #5c4400 / #fef7e0 8.6:1;
// cancelled #3c3c3c / #eeeeee 9.4:1; the nav #fff / #1f2a44 14.2:1. Endpoint badges reuse them (ok as
// sent, circuit open as queued, disabled as dead); the endpoint warning box is text and links on #fef7e0.
/** Every text colour of the stylesheet with its background, checked for WCAG AA (≥ 4.5:1) by layout.test.ts. */
/** @internal Exported for its tests. */
export const TEXT_COLOUR_PAIRS: readonly (readonly [string, string])[] = [
  ['#1b1b1b', '#ffffff'],
  ['#4d4d4d', '#ffffff'],
  ['#0b57d0', '#ffffff'],
  ['#ffffff', '#0b57d0'],
  ['#0d5c2e', '#e6f4ea'],
  ['#8c1d18', '#fce8e6'],
  ['#5c4400', '#fef7e0'],
  ['#3c3c3c', '#eeeeee'],
  ['#ffffff', '#1f2a44'],
  ['#1b1b1b', '#f2f2f2'],
  ['#1b1b1b', '#eef3fc'],
  ['#1b1b1b', '#fce8e6'],
  ['#1b1b1b', '#fef7e0'],
  ['#0b57d0', '#fef7e0'],
];

// The notification list has eight columns since the next attempt's: its two wrapping ones take
// 10rem at least (not 12), so it stays inside main's 72rem at 1280 px (the browser test's 5e).
const STYLE = `
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,sans-serif;color:#1b1b1b;background:#fff;margin:0}
a{color:#0b57d0}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:2}
header{background:#1f2a44;color:#fff;padding:.5rem 1rem;display:flex;gap:1rem;align-items:center;flex-wrap:wrap}
header a{color:#fff}header nav ul{list-style:none;display:flex;gap:1rem;margin:0;padding:0;flex-wrap:wrap}
header a[aria-current=page]{font-weight:700;text-decoration-thickness:3px}
header form{margin-left:auto}
main{max-width:72rem;margin:1rem auto;padding:0 1rem;overflow-wrap:anywhere}
main:focus{outline:none}
.vh{position:absolute;width:1px;height:1px;overflow:hidden;clip-path:inset(50%);white-space:nowrap}
.table{overflow-x:auto;margin:.5rem 0}
table{border-collapse:collapse;width:100%;overflow-wrap:normal}
td.wrap{overflow-wrap:anywhere;min-width:12rem}
#notifications td.wrap{min-width:10rem}
caption{text-align:left;font-weight:600;padding:.25rem 0}
th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #c4c4c4;vertical-align:top}
th{background:#f2f2f2}tbody th{background:#fff;font-weight:400}
.muted{color:#4d4d4d}
.badge{display:inline-block;padding:0 .4rem;border-radius:.3rem;font-weight:600;white-space:nowrap}
.s-sent{color:#0d5c2e;background:#e6f4ea}.s-dead{color:#8c1d18;background:#fce8e6}
.s-queued{color:#5c4400;background:#fef7e0}.s-cancelled{color:#3c3c3c;background:#eee}
.s-ok{color:#0d5c2e;background:#e6f4ea}.s-open{color:#5c4400;background:#fef7e0}.s-disabled{color:#8c1d18;background:#fce8e6}
.warn{border-left:4px solid #a35200;background:#fef7e0;padding:.25rem 1rem;margin:.25rem 0}
form.inline{display:inline}
#confirm-summary{overflow-wrap:anywhere}
.pager{display:flex;gap:1.5rem;flex-wrap:wrap;margin:.75rem 0}
fieldset{min-width:0;border:1px solid #c4c4c4;margin:.5rem 0;padding:.5rem 1rem}
label{display:inline-block;margin:.25rem .75rem .25rem 0}
input,select,textarea,button{font:inherit;color:#1b1b1b}
input,select,textarea{max-width:100%;border:1px solid #6b6b6b;border-radius:.2rem;padding:.2rem .35rem;background:#fff}
textarea{width:100%;min-height:5rem}
button{background:#0b57d0;color:#fff;border:0;border-radius:.25rem;padding:.35rem .8rem;cursor:pointer}
button.secondary{background:#fff;color:#0b57d0;border:1px solid #0b57d0}
:focus-visible,input:focus-within,select:focus,textarea:focus{outline:3px solid #0b57d0;outline-offset:2px}
header :focus-visible{outline-color:#fff}
.notice{border-left:4px solid #0b57d0;background:#eef3fc;padding:.5rem 1rem}
.error{border-left:4px solid #8c1d18;background:#fce8e6;padding:.5rem 1rem}
pre{background:#f2f2f2;padding:.5rem;overflow:auto;white-space:pre-wrap}
svg text{font:13px system-ui,sans-serif;fill:#1b1b1b}
figure{margin:1rem 0}.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:0 0 .25rem;padding:0}
.swatch{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:-.05rem}
`;

const NAV: readonly (readonly [string, string])[] = [
  ['/console/notifications', 'Notifications'],
  ['/console/dead', 'Dead'],
  ['/console/templates', 'Templates'],
  ['/console/opt-outs', 'Opt-outs'],
  ['/console/health', 'Pipeline health'],
];

/** The id of a page's error message, which the fields it is about name in aria-describedby. */
const ERROR_ID = 'error';

/**
 * The page shell: skip link (to main, which takes the focus), navigation (when signed in),
 * sign-out form with its CSRF token. The title names the page (its h1), with "Error: " first when
 * it shows one.
 */
export function layout(
  opts: { title: string; active?: string; csrf?: string; tenantId?: string; notice?: string | undefined; error?: string | undefined },
  body: Html,
): Html {
  const nav = opts.csrf
    ? html`<header>
        <strong>notify console</strong><span class="muted" style="color:#fff">tenant ${opts.tenantId}</span>
        <nav aria-label="Console">
          <ul>
            ${NAV.map(([href, label]) => html`<li><a href="${href}" ${raw(opts.active === href ? 'aria-current="page"' : '')}>${label}</a></li>`)}
          </ul>
        </nav>
        <form method="post" action="/console/logout">
          <input type="hidden" name="_csrf" value="${opts.csrf}" /><button type="submit" class="secondary">Sign out</button>
        </form>
      </header>`
    : html`<header><strong>notify console</strong></header>`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width,initial-scale=1" />
        <title>${opts.error ? 'Error: ' : ''}${opts.title} · notify console</title>
        <style>
          ${raw(STYLE)}
        </style>
      </head>
      <body>
        <a class="skip" href="#main">Skip to content</a>${nav}
        <main id="main" tabindex="-1">
          <h1>${opts.title}</h1>
          ${opts.notice ? html`<p class="notice" role="status">${opts.notice}</p>` : ''}
          ${opts.error ? html`<p class="error" role="alert" id="${ERROR_ID}">${opts.error}</p>` : ''} ${body}
        </main>
      </body>
    </html>`;
}

/**
 * The way on from an error page without navigation (a refused or too-large form, a failure): the
 * console page the form was on, when the Referer names one (its path and query only, so it never
 * leads off the console), else the notifications.
 */
export function backLink(referer: string | undefined): Html {
  let from: URL | undefined;
  try {
    from = referer ? new URL(referer) : undefined;
  } catch {
    from = undefined;
  }
  return from && from.pathname.startsWith('/console/') && from.pathname !== '/console/logout'
    ? html`<p><a href="${from.pathname}${from.search}">Back to the page you came from</a> (reload it before you send the form again)</p>`
    : html`<p><a href="/console/notifications">Back to notifications</a></p>`;
}

/** A state badge. */
export function stateBadge(state: string): Html {
  return html`<span class="badge s-${state}">${state}</span>`;
}

/** An instant as ISO text in a <time>. */
export function time(d: Date | string | null): Html {
  if (d === null) return html`<span class="muted">—</span>`;
  const iso = new Date(d).toISOString();
  return html`<time datetime="${iso}">${iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</time>`;
}

/** `n` and the word, plural unless n is 1: "1 attempt", "3 attempts". */
export function counted(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The hidden CSRF field every state-changing form carries. */
export function csrfField(token: string): Html {
  return html`<input type="hidden" name="_csrf" value="${token}" />`;
}

/**
 * The attributes of a form field the page's error is about (none when it is not): invalid,
 * described by the error, and focused on load, so a screen reader reads the field and the error
 * together (the page has no script to move the focus).
 */
export function invalidIf(invalid: boolean): Html | string {
  return invalid ? raw(`aria-invalid="true" aria-describedby="${ERROR_ID}" autofocus`) : '';
}

/**
 * A table with its caption (`hidden`: for screen readers only, where a heading just above says
 * it) and a header row of `columns` (each a `<th scope="col">`), in a region that scrolls sideways
 * on a narrow screen: focusable, so a keyboard can scroll it, and named by the caption. `rows` are
 * the body's `<tr>`s.
 */
export function table(
  id: string,
  caption: string | Html,
  columns: readonly string[],
  rows: Html | readonly Html[],
  opts: { hidden?: boolean } = {},
): Html {
  return html`<div class="table" role="region" tabindex="0" aria-labelledby="${id}-caption">
    <table id="${id}">
      <caption id="${id}-caption" ${raw(opts.hidden ? 'class="vh"' : '')}>
        ${caption}
      </caption>
      <thead>
        <tr>
          ${columns.map((c) => html`<th scope="col">${c}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${rows}
      </tbody>
    </table>
  </div>`;
}
