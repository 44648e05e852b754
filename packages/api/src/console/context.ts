import type { Context } from 'hono';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import type { SqlExecutor } from '@notify/outbox';
import type { ProviderOrigins } from '@notify/providers';
import type { Clock, Logger } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import { html } from 'hono/html';
import { type Html, layout } from './layout.js';
import type { PipelineProbe } from './pipeline.js';
import type { ConsoleSession } from './session-store.js';

/** Hono's environment of the console: the app's, plus the signed-in session. */
export interface ConsoleEnv {
  Variables: AppEnv['Variables'] & { session: ConsoleSession };
}

/** What the console needs. */
export interface ConsoleDeps {
  readonly db: Kysely<Database>;
  readonly exec: SqlExecutor;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retry: { readonly maxAttempts: number };
  /** NOTIFY_CONSOLE_SHOW_CONTENT: show bodies and data. */
  readonly showContent: boolean;
  readonly pipeline: PipelineProbe | undefined;
  /** The email and SMS providers' endpoint origins, to find a notification's endpoint as the dispatcher does. */
  readonly endpointOrigins: ProviderOrigins;
  /** Session lifetime, ms. */
  readonly sessionTtlMs: number;
}

// Fixed texts for the outcome of a form, chosen by a code in the redirect's query string (so a
// crafted link cannot put words of its own on the page).
const NOTICES: Readonly<Record<string, string>> = {
  retried: 'Re-queued: the notification is due now.',
  cancelled: 'Cancelled.',
  bulk: 'Re-queued the dead notifications of the group.',
  'bulk-none': 'Nothing was re-queued: the notifications of the group have expired (they stay dead) or were retried already.',
  created: 'Template version stored.',
  activated: 'Version activated: notifications without a pinned version render it from now on.',
  added: 'Opt-out recorded.',
  removed: 'Opt-out removed.',
  'endpoint-enabled': 'Endpoint enabled: its notifications are delivered from their next attempt.',
  'endpoint-disabled': 'Endpoint disabled: its notifications end dead (endpoint_disabled) at their next attempt.',
  stale:
    'Nothing was done: it had changed since the confirmation page was shown (or that confirmation was already used). Check it here and act again if it still needs it.',
  'bulk-again': 'Nothing more was done: that confirmation had already run. It re-queued the dead notifications of the group',
};

/** Renders a console page for the signed-in session, with the notice named in `?done=`. */
export function page(
  c: Context<ConsoleEnv>,
  opts: { title: string; active?: string; error?: string | undefined; status?: 200 | 404 | 403 | 409 | 422 },
  body: Html,
) {
  const s = c.get('session');
  const done = c.req.query('done');
  let notice = done !== undefined ? NOTICES[done] : undefined;
  const n = c.req.query('n');
  if (notice && n !== undefined && /^\d{1,6}$/.test(n)) notice = `${notice} (${n})`;
  return c.html(
    layout({ title: opts.title, active: opts.active, csrf: s.csrfToken, tenantId: s.tenantId, notice, error: opts.error }, body),
    opts.status ?? 200,
  );
}

/** The 404 page: another tenant's id looks exactly like one that does not exist. */
export function notFoundPage(c: Context<ConsoleEnv>, what: string) {
  return page(
    c,
    { title: 'Not found', status: 404 },
    html`<p>There is no ${what} here. <a href="/console/notifications">Back to notifications</a></p>`,
  );
}

/**
 * A stored value for a hidden form field that must come back as it is: browsers rewrite every
 * line break of a submitted value to CRLF (a dead group whose error held a newline matched
 * nothing), so it travels as base64url. `exactFormText` reads it back.
 */
export function exactField(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

/** The value an `exactField` carried ('' when absent). */
export function exactFormText(form: Record<string, unknown>, key: string): string {
  return Buffer.from(formText(form, key), 'base64url').toString('utf8');
}

/** A text field of a parsed form ('' when absent or a file). */
export function formText(form: Record<string, unknown>, key: string): string {
  const v = form[key];
  return typeof v === 'string' ? v : '';
}
