import { html } from 'hono/html';
import { type ConsoleEnv, page } from './context.js';
import { type Html, csrfField } from './layout.js';
import type { Context } from 'hono';

/** The hidden field that turns a form's POST from "show what would happen" into "do it". */
const CONFIRM_FIELD = 'confirm';

/**
 * Whether a POST is the confirmation of an interstitial (`confirmPage`). Pages have no scripts,
 * so a button that changes or re-sends something first posts without this field and is shown
 * what it would do; only the interstitial's form carries it.
 */
export function isConfirmed(form: Record<string, unknown>): boolean {
  return form[CONFIRM_FIELD] === '1';
}

/** Hidden inputs carrying `fields` (values escaped; base64url them with `exactField` where they must come back exactly). */
export function hiddenInputs(fields: Readonly<Record<string, string>>): Html {
  return html`${Object.entries(fields).map(([name, value]) => html`<input type="hidden" name="${name}" value="${value}" />`)}`;
}

/**
 * The interstitial before an action: what will happen, a "Confirm" form posting `fields` back to
 * `action` with the CSRF token and the confirm field, and a "Back" link. Every value is escaped by
 * the template; `fields` travel in hidden inputs (`hiddenInputs`).
 */
export function confirmPage(
  c: Context<ConsoleEnv>,
  opts: { title: string; active: string; action: string; back: string; button: string; fields?: Readonly<Record<string, string>> },
  summary: Html,
) {
  return page(
    c,
    { title: opts.title, active: opts.active },
    html`<div id="confirm-summary">${summary}</div>
      <form method="post" action="${opts.action}">
        ${csrfField(c.get('session').csrfToken)}<input type="hidden" name="${CONFIRM_FIELD}" value="1" />${hiddenInputs(opts.fields ?? {})}
        <p><button type="submit" id="confirm">${opts.button}</button> <a href="${opts.back}" id="back">Back</a></p>
      </form>`,
  );
}
