import { type Context, Hono } from 'hono';
import { html } from 'hono/html';
import type { Notification } from '@notify/outbox';
import { endpointId, notificationEndpointTargets } from '@notify/providers';
import { applyEndpointChange } from '../endpoint-actions.js';
import { ENDPOINT_ID } from '../endpoint-schemas.js';
import { type EndpointRecord, endpointGet } from '../sql/endpoint-get.js';
import { confirmPage, isConfirmed } from './confirm.js';
import { type ConsoleDeps, type ConsoleEnv, formText, notFoundPage } from './context.js';
import { type Html, counted, csrfField, table, time } from './layout.js';
import { endpointNotOkList } from './sql/endpoint-not-ok-list.js';

/** How many endpoints that are not ok the health page lists. */
const NOT_OK_SHOWN = 100;

/** Where the health page lists an endpoint that is not ok (its row). */
const healthLink = (id: string) => `/console/health#${id}`;

/** An endpoint's state as a badge: `open` reads "circuit open". */
function endpointBadge(state: EndpointRecord['state']): Html {
  return html`<span class="badge s-${state}">${state === 'open' ? 'circuit open' : state}</span>`;
}

/** Since when an endpoint is not ok, and who disabled it. */
function endpointSince(e: EndpointRecord): Html {
  if (e.state === 'disabled')
    return html`${time(e.disabled_at)}
    (${e.disabled_by === 'auto' ? 'automatically, after failing since' : 'by an operator'}${
      e.disabled_by === 'auto' ? html` ${time(e.failing_since)}` : ''
    })`;
  return time(e.opened_at);
}

/** When deliveries to an endpoint that is not ok go on, as the API's `probe_at` / `state` say. */
function endpointResumes(e: EndpointRecord, now: Date): Html {
  if (e.state === 'disabled') return html`when an operator enables it`;
  if (e.probe_at !== null && new Date(e.probe_at).getTime() > now.getTime())
    return html`a probe goes at ${time(e.probe_at)}; deliveries resume when one succeeds`;
  return html`a probe is due now; deliveries resume when one succeeds`;
}

/** The failure streak and the last error code of an endpoint. */
const failures = (e: EndpointRecord) =>
  html`${counted(e.consecutive_failures, 'failure')} in a
  row${e.last_error_code !== null ? html`, last <code>${e.last_error_code}</code>` : ''}`;

/** What an endpoint is called on a page: its origin, and which provider of the channel it is. */
const endpointName = (e: EndpointRecord) => `${e.origin}${e.provider === 'fallback' ? ' (fallback)' : ''}`;

/**
 * The health page's section on the tenant's endpoints: the ones whose circuit is open or that are
 * disabled, with since when, the failures, when deliveries resume, and Enable / Disable; or a
 * line saying all are ok (or that there are none yet).
 */
export async function endpointsSection(deps: ConsoleDeps, c: Context<ConsoleEnv>): Promise<Html> {
  const s = c.get('session');
  const now = deps.clock.now();
  const { rows, count, any } = await endpointNotOkList(deps.exec, { tenantId: s.tenantId, limit: NOT_OK_SHOWN });
  const heading = html`<h2 id="endpoints">Endpoints</h2>`;
  if (!any)
    return html`${heading}
      <p id="endpoints-summary">
        This tenant has no endpoints yet: an endpoint (a webhook origin, an email or SMS provider) is recorded once a delivery to it
        answers.
      </p>`;
  if (count === 0)
    return html`${heading}
      <p id="endpoints-summary">All of this tenant's endpoints are ok: no circuit is open and none is disabled.</p>`;
  const form = (e: EndpointRecord, action: 'enable' | 'disable') =>
    html`<form method="post" action="/console/endpoints/${e.id}/${action}" class="inline">
      ${csrfField(s.csrfToken)}<button
        type="submit"
        class="secondary"
        aria-label="${action === 'enable' ? 'Enable' : 'Disable'} ${e.origin}"
      >
        ${action === 'enable' ? 'Enable' : 'Disable'}
      </button>
    </form>`;
  return html`${heading}
    <p id="endpoints-summary">
      <strong>${counted(count, 'endpoint')} not delivering</strong>: notifications to an open circuit wait for it without spending an
      attempt; notifications to a disabled endpoint end dead (<code>endpoint_disabled</code>) at their next
      attempt.${
        count > rows.length
          ? html` The ${rows.length} that stopped most recently are shown; <code>GET /v1/endpoints?state=open</code> and
              <code>?state=disabled</code> list all.`
          : ''
      }
    </p>
    ${table(
      'endpoints-not-ok',
      'Endpoints not delivering: open circuits and disabled endpoints, latest first',
      ['Endpoint', 'Channel', 'State', 'Since', 'Failures', 'Deliveries resume', 'Action'],
      rows.map(
        (e) =>
          html`<tr id="${e.id}">
            <th scope="row" class="wrap">${endpointName(e)}</th>
            <td>${e.channel}</td>
            <td>${endpointBadge(e.state)}</td>
            <td>${endpointSince(e)}</td>
            <td>${failures(e)}</td>
            <td>${endpointResumes(e, now)}</td>
            <td>${form(e, 'enable')}${e.state === 'open' ? html` ${form(e, 'disable')}` : ''}</td>
          </tr>`,
      ),
    )}`;
}

/**
 * What the endpoints a notification is delivered to mean for it, when one of them is not ok:
 * their state, and whether the notification waits (an open circuit), will end dead (disabled),
 * or goes to the channel's other provider; empty when every one is ok. The endpoints are the
 * dispatcher's (`notificationEndpointTargets`): a webhook's URL origin, an email or SMS
 * notification's provider and its fallback (`ConsoleOptions.endpointOrigins`).
 */
export async function notificationEndpointState(deps: ConsoleDeps, n: Notification): Promise<Html | ''> {
  const targets = notificationEndpointTargets({ tenantId: n.tenant_id, channel: n.channel, recipient: n.recipient }, deps.endpointOrigins);
  const found = await Promise.all(targets.map((t) => endpointGet(deps.exec, { tenantId: n.tenant_id, id: endpointId(t) })));
  const troubled = found.filter((e): e is EndpointRecord => e !== undefined && e.state !== 'ok');
  if (troubled.length === 0) return '';
  const now = deps.clock.now();
  // The dispatcher tries each endpoint in turn and sends through the first that admits it.
  const delivering = found.findIndex((e) => e === undefined || e.state === 'ok');
  const open = troubled.filter((e) => e.state === 'open');
  const probe = open
    .map((e) => e.probe_at)
    .filter((d): d is Date => d !== null)
    .sort((a, b) => new Date(a).getTime() - new Date(b).getTime())[0];
  const probeText =
    probe !== undefined && new Date(probe).getTime() > now.getTime()
      ? html`the next probe goes at ${time(probe)}`
      : html`a probe is due now`;
  let meaning: Html;
  if (delivering >= 0) {
    meaning =
      delivering === 0
        ? html`It does not hold this notification: its attempts go to the channel's provider, which is ok.`
        : html`Its attempts go to the fallback, ${targets[delivering]!.origin}, meanwhile.`;
  } else if (n.state === 'queued') {
    meaning =
      open.length > 0
        ? html`<strong>Waiting:</strong> while the circuit is open its attempts are put off without spending one; ${probeText}, and it is
            delivered once a probe succeeds (or an operator enables the endpoint).`
        : html`<strong>Paused:</strong> at its next attempt (${time(n.next_attempt_at)}) it ends dead (<code>endpoint_disabled</code>)
            without being sent, unless an operator enables the endpoint first.`;
  } else if (n.state === 'dead') {
    meaning =
      open.length > 0
        ? html`A retry would wait for the circuit: ${probeText}.`
        : html`A retry would end dead again (<code>endpoint_disabled</code>) unless the endpoint is enabled first.`;
  } else {
    meaning = html`This notification is ${n.state}: nothing more is sent for it. The tenant's other notifications to this endpoint are held.`;
  }
  return html`<dt>Endpoint</dt>
    <dd id="endpoint-state" class="warn">
      ${troubled.map(
        (e) =>
          html`<p>
            ${endpointBadge(e.state)} <a href="${healthLink(e.id)}">${endpointName(e)}</a> since ${endpointSince(e)}: ${failures(e)};
            ${endpointResumes(e, now)}.
          </p>`,
      )}
      <p>${meaning}</p>
    </dd>`;
}

/** Enable and Disable of an endpoint from the health page, each after a confirmation page. */
export function endpointPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();
  const act = (action: 'enable' | 'disable') => async (c: Context<ConsoleEnv>) => {
    const id = c.req.param('id') ?? '';
    const s = c.get('session');
    const e = ENDPOINT_ID.test(id) ? await endpointGet(deps.exec, { tenantId: s.tenantId, id }) : undefined;
    if (!e) return notFoundPage(c, `endpoint ${id}`);
    const form = await c.req.parseBody();
    // What the confirmation showed: a state that moved on since (a probe closed the circuit, another operator acted) acts on nothing.
    const seen = `${e.state}.${e.disabled_by ?? ''}`;
    if (!isConfirmed(form)) {
      const what = html`endpoint <strong>${endpointName(e)}</strong> (${e.channel}),
        ${endpointBadge(e.state)}${e.state === 'ok' ? '' : html` since ${endpointSince(e)}`}, ${failures(e)}`;
      return confirmPage(
        c,
        {
          title: action === 'enable' ? 'Enable this endpoint?' : 'Disable this endpoint?',
          active: '/console/health',
          action: `/console/endpoints/${e.id}/${action}`,
          back: healthLink(e.id),
          button: action === 'enable' ? 'Confirm: enable the endpoint' : 'Confirm: disable the endpoint',
          fields: { seen },
        },
        action === 'enable'
          ? html`<p>This enables ${what}.</p>
              <p>
                Its circuit closes and its failure streak starts again: the notifications waiting for it are delivered at their next attempt
                (dispatchers see the change within about a second). If it still fails, the circuit opens again after the failure threshold.
              </p>`
          : html`<p>This disables ${what}.</p>
              <p>
                Its notifications end dead (<code>endpoint_disabled</code>) at their next attempt, without being sent, until an operator
                enables it again.
              </p>`,
      );
    }
    if (formText(form, 'seen') !== seen) return c.redirect(`/console/health?done=stale#${e.id}`, 303);
    const result = await applyEndpointChange(deps.db, {
      tenantId: s.tenantId,
      id: e.id,
      apiKeyId: s.apiKeyId,
      change: { action },
      now: deps.clock.now(),
    });
    if (result?.changed)
      deps.logger.info({ tenantId: s.tenantId, endpointId: e.id, action, apiKeyId: s.apiKeyId }, `console endpoint ${action}`);
    return c.redirect(`/console/health?done=endpoint-${action}d#endpoints`, 303);
  };
  app.post('/endpoints/:id/enable', act('enable'));
  app.post('/endpoints/:id/disable', act('disable'));
  return app;
}
