import { type Context, Hono } from 'hono';
import { html } from 'hono/html';
import { suppressionMatch } from '@notify/runtime';
import {
  CHANNELS,
  type Channel,
  DEAD_REASONS,
  NOTIFICATION_STATES,
  type Notification,
  type NotificationState,
  isNotificationId,
} from '@notify/outbox';
import { ProblemError } from '../problem.js';
import { deadFilterIssues } from '../schemas.js';
import { cancelNotification, retryNotification } from '../notification-actions.js';
import { attemptList } from '../sql/attempt-list.js';
import { notificationActionList } from '../sql/notification-action-list.js';
import { notificationGet } from '../sql/notification-get.js';
import { decodeCursor, encodeCursor } from '../views.js';
import { confirmPage, isConfirmed } from './confirm.js';
import { deadGroupText } from './dead-page.js';
import { notificationEndpointState } from './endpoints.js';
import { type ConsoleDeps, type ConsoleEnv, formText, notFoundPage, page } from './context.js';
import { type Html, counted, csrfField, invalidIf, stateBadge, table, time } from './layout.js';
import { cursorParam, listUrl, pagerLinks } from './paging.js';
import { notificationPage } from './sql/notification-page.js';

const PAGE_SIZE = 50;

/** The search form's label of each parameter a refusal can name. */
const SEARCH_LABELS: Readonly<Record<string, string>> = {
  state: 'State',
  last_error_prefix: 'Last error',
  has_last_error: 'Last error recorded',
  from: 'Created from',
  until: 'until',
};

const DAY_MS = 86_400_000;

/**
 * A `from` / `until` date (UTC) as an instant, or undefined when it is not a real date from 1970
 * on (2026-02-30 is not March 2; before 1970 no id exists). `until` names the last day shown, so a
 * bare date bounds at the end of that day: from and until the same day is that day.
 */
function dateParam(v: string | undefined, bound: 'from' | 'until'): Date | undefined {
  if (!v || !/^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2})?)?$/.test(v)) return undefined;
  const d = new Date(v.length === 10 ? `${v}T00:00:00Z` : `${v}Z`);
  if (Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== v.slice(0, 10) || d.getTime() < 0) return undefined;
  return bound === 'until' && v.length === 10 ? new Date(d.getTime() + DAY_MS) : d;
}

/** When the death a retry action ended happened: its last attempt before the action, else the action itself. */
function deathBefore(attempts: readonly { readonly finished_at: Date }[], action: { readonly occurred_at: Date }): Date {
  const at = new Date(action.occurred_at).getTime();
  let last: number | undefined;
  for (const a of attempts) {
    const t = new Date(a.finished_at).getTime();
    if (t <= at && (last === undefined || t > last)) last = t;
  }
  return new Date(last ?? at);
}

/**
 * When a queued notification is next attempted: its send time while it waits for it (scheduled,
 * no attempt made yet), else when its next attempt is due; nothing for a finished one.
 */
function nextAttempt(n: Notification): Html | '' {
  if (n.state !== 'queued' || n.next_attempt_at === null) return '';
  return n.send_at !== null && n.attempts === 0 ? html`${time(n.next_attempt_at)} (scheduled)` : time(n.next_attempt_at);
}

const short = (s: string | null, n = 80) => (s === null ? '' : s.length > n ? `${s.slice(0, n)}…` : s);

/** Notifications: search and detail, with Retry and Cancel. */
export function notificationPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get('/notifications', async (c) => {
    const q = c.req.query();
    const tenantId = c.get('session').tenantId;
    const id = q.id?.trim();
    if (id) {
      const n = isNotificationId(id) ? await notificationGet(deps.exec, { tenantId, id }) : undefined;
      if (n) return c.redirect(`/console/notifications/${n.id}`, 303);
      return notFoundPage(c, `notification ${id}`);
    }
    const state = (NOTIFICATION_STATES as readonly string[]).includes(q.state ?? '') ? (q.state as NotificationState) : undefined;
    const channel = (CHANNELS as readonly string[]).includes(q.channel ?? '') ? (q.channel as Channel) : undefined;
    const recipient = q.to?.trim() || undefined;
    const createdFrom = dateParam(q.from, 'from');
    const createdTo = dateParam(q.until, 'until');
    // A dead group, as the dead page links to it: the reason, and the last error's first 200
    // characters exactly (not trimmed) or none. The form sends every field, so empty means any.
    const deadReason = (DEAD_REASONS as readonly string[]).includes(q.dead_reason ?? '') ? q.dead_reason : undefined;
    const lastErrorPrefix = q.last_error_prefix || undefined;
    const hasLastError = q.has_last_error === 'true' || q.has_last_error === 'false' ? q.has_last_error : undefined;
    // A date the list cannot use is said, not ignored (a mistyped one would list everything).
    const dateIssue =
      q.from && !createdFrom
        ? { path: 'from', message: 'not a date from 1970 on (YYYY-MM-DD)' }
        : q.until && !createdTo
          ? { path: 'until', message: 'not a date from 1970 on (YYYY-MM-DD)' }
          : createdFrom && createdTo && createdFrom >= createdTo
            ? { path: 'until', message: 'before the start (Created from): no day is in between' }
            : undefined;
    const refused =
      dateIssue ??
      deadFilterIssues({
        state,
        dead_reason: deadReason,
        last_error_prefix: lastErrorPrefix,
        has_last_error: hasLastError,
      })[0];
    const at = cursorParam(q);
    const cursorId = at ? decodeCursor(at.token) : undefined;
    const { rows: shown, ...more } = refused
      ? { rows: [], next: false, previous: false }
      : await notificationPage(deps.exec, {
          tenantId,
          filter: {
            recipient,
            state,
            channel,
            createdFrom,
            createdTo,
            deadReason,
            lastErrorPrefix,
            hasLastError: hasLastError === undefined ? undefined : hasLastError === 'true',
          },
          cursor: at && cursorId !== undefined && isNotificationId(cursorId) ? { key: cursorId, toward: at.toward } : undefined,
          limit: PAGE_SIZE,
        });
    const keep = new URLSearchParams(
      Object.entries({
        to: recipient ?? '',
        state: state ?? '',
        channel: channel ?? '',
        dead_reason: deadReason ?? '',
        last_error_prefix: lastErrorPrefix ?? '',
        has_last_error: hasLastError ?? '',
        from: q.from ?? '',
        until: q.until ?? '',
      }).filter(([, v]) => v),
    );
    // Back at the newest rows: the first page itself, full, rather than the few above the cursor.
    if (at?.toward === 'previous' && !more.previous) return c.redirect(listUrl('/console/notifications', keep), 303);
    const pager = pagerLinks(
      '/console/notifications',
      keep,
      {
        previous: more.previous && shown.length > 0 ? encodeCursor(shown[0]!.id) : undefined,
        next: more.next && shown.length > 0 ? encodeCursor(shown[shown.length - 1]!.id) : undefined,
      },
      { previous: 'Newer notifications', next: 'Older notifications' },
    );
    const option = (value: string, current: string | undefined, label = value || 'any') =>
      html`<option value="${value}" ${current === value ? 'selected' : ''}>${label}</option>`;
    // The field to correct: the reason when it is missing, else the one the refusal names.
    const invalid = (field: string) =>
      invalidIf(refused !== undefined && (dateIssue?.path ?? (deadReason === undefined ? 'dead_reason' : refused.path)) === field);
    return page(
      c,
      {
        title: 'Notifications',
        active: '/console/notifications',
        ...(refused && { status: 422 as const, error: `${SEARCH_LABELS[refused.path]}: ${refused.message}.` }),
      },
      html`<form method="get" action="/console/notifications" role="search">
          <fieldset>
            <legend>Search</legend>
            <label for="f-id">Id</label><input id="f-id" name="id" size="32" placeholder="ntf_…" />
            <label for="f-to">Recipient (exact)</label><input id="f-to" name="to" value="${recipient ?? ''}" size="28" />
            <label for="f-state">State</label
            ><select id="f-state" name="state" ${invalid('state')}>
              ${['', ...NOTIFICATION_STATES].map((s) => option(s, state ?? ''))}
            </select>
            <label for="f-channel">Channel</label
            ><select id="f-channel" name="channel">
              ${['', ...CHANNELS].map((s) => option(s, channel ?? ''))}
            </select>
            <label for="f-dead-reason">Dead reason</label
            ><select id="f-dead-reason" name="dead_reason" ${invalid('dead_reason')}>
              ${['', ...DEAD_REASONS].map((s) => option(s, deadReason ?? ''))}
            </select>
            <label for="f-last-error">Last error (its first 200 characters, exactly)</label
            ><input id="f-last-error" name="last_error_prefix" value="${lastErrorPrefix ?? ''}" size="28" maxlength="200" />
            <label for="f-has-last-error">Last error recorded</label
            ><select id="f-has-last-error" name="has_last_error" ${invalid('has_last_error')}>
              ${option('', hasLastError ?? '')} ${option('true', hasLastError, 'yes')} ${option('false', hasLastError, 'none')}
            </select>
            <label for="f-from">Created from</label><input id="f-from" name="from" type="date" value="${q.from ?? ''}" ${invalid('from')} />
            <label for="f-until">until</label><input id="f-until" name="until" type="date" value="${q.until ?? ''}" ${invalid('until')} />
            <button type="submit">Search</button>
          </fieldset>
        </form>
        ${
          deadReason !== undefined && (lastErrorPrefix !== undefined || hasLastError === 'false') && !refused
            ? html`<p id="dead-group">
                The dead notifications of one group of the <a href="/console/dead">dead page</a>:
                ${deadGroupText(deadReason, lastErrorPrefix ?? null)}.
              </p>`
            : ''
        }
        ${table(
          'notifications',
          'Notifications, newest first',
          ['Id', 'Channel', 'Recipient', 'State', 'Attempts', 'Created', 'Next attempt', 'Last error'],
          shown.map(
            (n) =>
              html`<tr>
                <td><a href="/console/notifications/${n.id}">${n.id}</a></td>
                <td>${n.channel}</td>
                <td class="wrap">${n.recipient}</td>
                <td>${stateBadge(n.state)}</td>
                <td>${n.attempts}/${n.max_attempts}</td>
                <td>${time(n.created_at)}</td>
                <td>${nextAttempt(n)}</td>
                <td class="wrap">${short(n.last_error)}</td>
              </tr>`,
          ),
        )}
        ${shown.length === 0 ? html`<p>No notifications match.</p>` : ''} ${pager}`,
    );
  });

  app.get('/notifications/:id', async (c) => {
    const id = c.req.param('id');
    const tenantId = c.get('session').tenantId;
    const n = isNotificationId(id) ? await notificationGet(deps.exec, { tenantId, id }) : undefined;
    if (!n) return notFoundPage(c, `notification ${id}`);
    const [attempts, actions, endpoint] = await Promise.all([
      attemptList(deps.exec, { notificationId: n.id }),
      notificationActionList(deps.exec, { notificationId: n.id }),
      notificationEndpointState(deps, n),
    ]);
    const csrf = c.get('session').csrfToken;
    // A retry after expires_at would only die again (the API answers 409 notification_expired).
    const expired = new Date(n.expires_at).getTime() <= deps.clock.now().getTime();
    // The status events a notification emits follow its transitions: created, each attempt's
    // outcome, each manual action, and the terminal state; rebuilt here from the rows that record them.
    const events = [
      { at: new Date(n.created_at), text: 'notification.queued' },
      ...attempts.map((a) => ({
        at: new Date(a.finished_at),
        text: `attempt ${a.attempt}: ${a.outcome}${a.provider_status ? ` (${a.provider_status})` : ''}`,
      })),
      // A manual retry ended an earlier death: that notification.dead, just before its requeue.
      ...actions.flatMap((a) =>
        a.previous_dead_reason === null ? [] : [{ at: deathBefore(attempts, a), text: `notification.dead (${a.previous_dead_reason})` }],
      ),
      ...actions.map((a) => ({
        at: new Date(a.occurred_at),
        text:
          `${a.action === 'retry' ? 'notification.requeued' : 'notification.cancelled'} ` +
          `(manual ${a.action}${a.bulk_retry_id ? `, bulk ${a.bulk_retry_id}` : ''}${a.api_key_id ? `, by key ${a.api_key_id}` : ', from the CLI'})`,
      })),
      ...(n.state === 'sent' && n.sent_at ? [{ at: new Date(n.sent_at), text: 'notification.sent' }] : []),
      ...(n.state === 'dead' ? [{ at: new Date(n.updated_at), text: `notification.dead (${n.dead_reason})` }] : []),
    ].sort((a, b) => a.at.getTime() - b.at.getTime());
    const content = deps.showContent
      ? html`<h2>Content</h2>
          ${n.subject !== null ? html`<p><strong>Subject:</strong> ${n.subject}</p>` : ''}${
            n.body !== null
              ? html`<pre>${n.body}</pre>`
              : html`<p>
                  Template
                  <a href="/console/templates/${encodeURIComponent(n.template ?? '')}">${n.template}</a
                  >${n.template_version !== null ? ` version ${n.template_version}` : ''}
                </p>`
          }${n.data !== null ? html`<pre>${JSON.stringify(n.data, null, 2)}</pre>` : ''}`
      : html`<p class="muted">Content is hidden (set NOTIFY_CONSOLE_SHOW_CONTENT=1 to show bodies and data).</p>`;
    return page(
      c,
      { title: `Notification ${n.id}`, active: '/console/notifications' },
      html`<dl>
          <dt>State</dt>
          <dd>${stateBadge(n.state)}${n.dead_reason ? html` <span>reason: ${n.dead_reason}</span>` : ''}</dd>
          ${endpoint}
          <dt>Channel and recipient</dt>
          <dd>${n.channel} → ${n.recipient}</dd>
          <dt>Priority and ordering</dt>
          <dd>${n.priority}, ${n.ordering}</dd>
          <dt>Scheduled for</dt>
          <dd>${n.send_at === null ? html`<span class="muted">none: sent when due</span>` : time(n.send_at)}</dd>
          <dt>Category</dt>
          <dd>${n.category ?? html`<span class="muted">none</span>`}</dd>
          <dt>Metadata</dt>
          <dd>
            ${
              Object.keys(n.metadata).length === 0
                ? html`<span class="muted">none</span>`
                : Object.entries(n.metadata).map(([k, v], i) => html`${i > 0 ? '; ' : ''}<code>${k}</code> = ${v}`)
            }
          </dd>
          <dt>Attempts</dt>
          <dd>${n.attempts} of ${n.max_attempts}</dd>
          <dt>Created</dt>
          <dd>${time(n.created_at)}</dd>
          <dt>Next attempt</dt>
          <dd>${time(n.next_attempt_at)}</dd>
          <dt>Sent</dt>
          <dd>${time(n.sent_at)}</dd>
          <dt>Expires</dt>
          <dd>${time(n.expires_at)}</dd>
          <dt>Last error</dt>
          <dd>${n.last_error ?? html`<span class="muted">none</span>`}</dd>
        </dl>
        ${
          n.state !== 'dead'
            ? ''
            : expired
              ? html`<p class="muted">Expired: a retry would only die again; enqueue a new notification.</p>`
              : html`<form method="post" action="/console/notifications/${n.id}/retry" class="inline">
                  ${csrfField(csrf)}<button type="submit">Retry</button>
                </form>`
        }
        ${n.state === 'queued' ? html`<form method="post" action="/console/notifications/${n.id}/cancel" class="inline">${csrfField(csrf)}<button type="submit">Cancel</button></form>` : ''}
        <h2>Attempts</h2>
        ${table(
          'attempts',
          'Attempts',
          ['#', 'Started', 'Finished', 'Outcome', 'Provider answer', 'Error'],
          attempts.map(
            (a) =>
              html`<tr>
                <td>${a.attempt}</td>
                <td>${time(a.started_at)}</td>
                <td>${time(a.finished_at)}</td>
                <td>${a.outcome}</td>
                <td>${a.provider_status ?? ''}</td>
                <td class="wrap">${a.error ?? ''}</td>
              </tr>`,
          ),
          { hidden: true },
        )}
        ${attempts.length === 0 ? html`<p>No attempts yet.</p>` : ''}
        <h2>Status events</h2>
        <ol>
          ${events.map((e) => html`<li>${time(e.at)} ${e.text}</li>`)}
        </ol>
        ${content}`,
    );
  });

  // What the confirmation page showed, so a repeated or stale confirmation acts on nothing else:
  // every transition changes the state, the attempt counts or updated_at.
  const version = (n: Notification) => `${n.state}.${n.attempts}.${n.max_attempts}.${new Date(n.updated_at).getTime()}`;

  /** Why the action cannot be taken now, in the action's own words; undefined when it can. */
  const refusal = (n: Notification, action: 'retry' | 'cancel'): string | undefined => {
    if (action === 'cancel')
      return n.state === 'queued' ? undefined : `Notification ${n.id} is ${n.state}; only queued notifications can be cancelled.`;
    if (n.state !== 'dead') return `Notification ${n.id} is ${n.state}; only dead notifications can be retried.`;
    return new Date(n.expires_at).getTime() <= deps.clock.now().getTime()
      ? `Notification ${n.id} expired at ${new Date(n.expires_at).toISOString()}: a retry would only die again; enqueue a new notification instead.`
      : undefined;
  };

  const confirmAction = async (c: Context<ConsoleEnv>, n: Notification, action: 'retry' | 'cancel') => {
    const who = html`notification <strong>${n.id}</strong> (${n.channel} → <strong>${n.recipient}</strong>)`;
    // An opt-out still in force stops the retry as it stopped the send: say so rather than "may receive it".
    const optOut =
      action === 'retry'
        ? await suppressionMatch(deps.exec, { tenantId: n.tenant_id, channel: n.channel, recipient: n.recipient, category: n.category })
        : null;
    const summary =
      action === 'retry'
        ? html`<p>This re-queues ${who}, dead (${n.dead_reason}) after ${n.attempts} of ${counted(n.max_attempts, 'attempt')}.</p>
            <p>
              It becomes due now with up to ${counted(deps.retry.maxAttempts, 'more attempt')} (the cap becomes
              ${n.attempts + deps.retry.maxAttempts})${
                optOut
                  ? html`, but the recipient's opt-out
                      (${optOut.category === '*' ? `every ${n.channel} message` : `category ${optOut.category}`}, since
                      ${time(optOut.createdAt)}) is still in force: it will die as suppressed again unless the opt-out is removed (<a
                        href="/console/opt-outs"
                        >Opt-outs</a
                      >).`
                  : ': the recipient may receive it.'
              }
            </p>`
        : html`<p>This cancels ${who}, queued, ${counted(n.attempts, 'attempt')} made, next attempt ${time(n.next_attempt_at)}.</p>
            <p>
              It will not be sent (a delivery request already on its way is skipped). A cancelled notification cannot be queued again.
            </p>`;
    return confirmPage(
      c,
      {
        title: action === 'retry' ? 'Retry this notification?' : 'Cancel this notification?',
        active: '/console/notifications',
        action: `/console/notifications/${n.id}/${action}`,
        back: `/console/notifications/${n.id}`,
        button: action === 'retry' ? 'Confirm: retry 1 notification' : 'Confirm: cancel 1 notification',
        fields: { seen: version(n) },
      },
      summary,
    );
  };

  const act = (action: 'retry' | 'cancel') => async (c: Context<ConsoleEnv>) => {
    const id = c.req.param('id') ?? '';
    const s = c.get('session');
    const n = isNotificationId(id) ? await notificationGet(deps.exec, { tenantId: s.tenantId, id }) : undefined;
    if (!n) return notFoundPage(c, `notification ${id}`);
    const form = await c.req.parseBody();
    const back = html`<p><a href="/console/notifications/${n.id}">Back</a></p>`;
    if (!isConfirmed(form)) {
      const refused = refusal(n, action);
      return refused === undefined ? await confirmAction(c, n, action) : page(c, { title: 'Not done', status: 422, error: refused }, back);
    }
    // Confirmed twice, or after the notification moved on (retried, died again, cancelled): act on nothing.
    const stale = () => c.redirect(`/console/notifications/${n.id}?done=stale`, 303);
    if (formText(form, 'seen') !== version(n)) return stale();
    const params = { db: deps.db, tenantId: s.tenantId, id: n.id, now: deps.clock.now(), apiKeyId: s.apiKeyId };
    try {
      if (action === 'retry') await retryNotification({ ...params, budget: deps.retry.maxAttempts });
      else await cancelNotification(params);
    } catch (err) {
      // A twin confirmation that passed the check above at the same moment finds it moved on under the row lock.
      if (err instanceof ProblemError && err.code === 'invalid_transition') return stale();
      if (err instanceof ProblemError) return page(c, { title: 'Not done', status: 422, error: err.message }, back);
      throw err;
    }
    deps.logger.info({ notificationId: n.id, tenantId: s.tenantId, apiKeyId: s.apiKeyId }, `console ${action}`);
    return c.redirect(`/console/notifications/${n.id}?done=${action === 'retry' ? 'retried' : 'cancelled'}`, 303);
  };
  app.post('/notifications/:id/retry', act('retry'));
  app.post('/notifications/:id/cancel', act('cancel'));
  return app;
}
