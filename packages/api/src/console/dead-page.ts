import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { html } from 'hono/html';
import { DEAD_REASONS } from '@notify/outbox';
import { BULK_RETRY_MAX, bulkRetry } from '../notification-actions.js';
import { ProblemError } from '../problem.js';
import { deadGroupList } from '../sql/dead-group-list.js';
import { type ConsoleDeps, type ConsoleEnv, exactField, exactFormText, formText, page } from './context.js';
import { confirmPage, hiddenInputs, isConfirmed } from './confirm.js';
import { type Html, counted, csrfField, table } from './layout.js';
import { listUrl } from './paging.js';
import { deadGroupCount } from './sql/dead-group-count.js';

/** The largest groups the dead page shows; it says how many there are when there are more. */
const DEAD_GROUPS_SHOWN = 100;

/** The fields that name a dead group: its row's Retry form and the confirmation. */
const groupFields = (reason: string, error: string | null) => ({
  dead_reason: reason,
  error: exactField(error ?? ''),
  has_error: error === null ? '0' : '1',
});

/** A dead group in words: its reason, and the start of its last error or none. */
export function deadGroupText(reason: string, error: string | null): Html {
  return html`reason <strong>${reason}</strong>${error === null ? html`, no last error` : html`, last error starting <q>${error}</q>`}`;
}

/**
 * The console's notification list of exactly one dead group: the same reason and the same first
 * 200 characters of the last error, or none (URLSearchParams keeps every character, line breaks too).
 */
function deadGroupListUrl(reason: string, error: string | null): string {
  const q = new URLSearchParams({ dead_reason: reason });
  if (error === null) q.set('has_last_error', 'false');
  else q.set('last_error_prefix', error);
  return listUrl('/console/notifications', q);
}

/** Dead: notifications grouped by reason and last error, each group with a bulk retry. */
export function deadPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get('/dead', async (c) => {
    const s = c.get('session');
    const groups = await deadGroupList(deps.exec, { tenantId: s.tenantId, limit: DEAD_GROUPS_SHOWN });
    return page(
      c,
      { title: 'Dead notifications', active: '/console/dead' },
      html`<p>
          Grouped by reason and the start of the last error, largest group first. A bulk retry re-queues up to
          ${BULK_RETRY_MAX.toLocaleString('en')} of a group (expired ones stay dead). A group's count lists its notifications;
          <a href="/console/notifications?state=dead">every dead notification</a>, newest first.
        </p>
        ${table(
          'dead-groups',
          'Dead notifications by reason and last error',
          ['Reason', 'Last error', 'Count', 'Newest', 'Action'],
          groups.map(
            (g, i) =>
              html`<tr>
                <td>${g.dead_reason}</td>
                <td class="wrap">${g.error ?? html`<span class="muted">none</span>`}</td>
                <td>
                  <a href="${deadGroupListUrl(g.dead_reason, g.error)}" aria-label="${g.count}: list the dead notifications of this group"
                    >${g.count}</a
                  >
                </td>
                <td><a href="/console/notifications/${g.newest_id}">${g.newest_id}</a></td>
                <td>
                  ${
                    g.dead_reason === 'expired'
                      ? html`<span class="muted">expired: stays dead</span>`
                      : html`<form method="post" action="/console/dead/retry">
                          ${csrfField(s.csrfToken)} ${hiddenInputs(groupFields(g.dead_reason, g.error))}
                          <button type="submit" id="bulk-retry-${i}" aria-label="Retry ${g.count}: the dead notifications of this group">
                            Retry ${g.count}
                          </button>
                        </form>`
                  }
                </td>
              </tr>`,
          ),
          { hidden: true },
        )}
        ${groups.length === 0 ? html`<p>No dead notifications.</p>` : ''}
        ${
          groups.length > 0 && groups[0]!.groups > groups.length
            ? html`<p class="notice" id="more-groups">
                The ${groups.length} largest of ${groups[0]!.groups.toLocaleString('en')} groups. The others, by reason:
                ${DEAD_REASONS.map(
                  (r, i) =>
                    html`${i > 0 ? ', ' : ''}<a
                        href="${listUrl('/console/notifications', new URLSearchParams({ state: 'dead', dead_reason: r }))}"
                        >${r}</a
                      >`,
                )}.
              </p>`
            : ''
        }`,
    );
  });

  app.post('/dead/retry', async (c) => {
    const s = c.get('session');
    const form = await c.req.parseBody();
    const reason = formText(form, 'dead_reason');
    if (!(DEAD_REASONS as readonly string[]).includes(reason))
      return page(
        c,
        { title: 'Not done', status: 422, error: 'Unknown dead reason.' },
        html`<p><a href="/console/dead">Back to the dead notifications</a></p>`,
      );
    // A group is one (reason, error) pair of the dead page: its error may be none, which is not "any".
    const error = form.has_error === '1' ? exactFormText(form, 'error') : null;
    const group = deadGroupText(reason, error);
    if (!isConfirmed(form)) {
      const { dead, retryable } = await deadGroupCount(deps.exec, {
        tenantId: s.tenantId,
        deadReason: reason,
        lastErrorPrefix: error,
        now: deps.clock.now(),
      });
      const count = Math.min(retryable, BULK_RETRY_MAX);
      if (count === 0)
        return page(
          c,
          { title: 'Nothing to retry', active: '/console/dead' },
          html`<p>
              No notification of the group (${group}) can be re-queued:
              ${dead === 0 ? 'none is dead any more' : `all ${dead} have expired and stay dead`}.
            </p>
            <p><a href="/console/dead">Back</a></p>`,
        );
      return confirmPage(
        c,
        {
          title: `Retry ${counted(count, 'dead notification')}?`,
          active: '/console/dead',
          action: '/console/dead/retry',
          back: '/console/dead',
          button: `Confirm: retry ${counted(count, 'notification')}`,
          fields: { ...groupFields(reason, error), count: String(count), nonce: randomBytes(12).toString('base64url') },
        },
        html`<p>
            This re-queues <strong id="confirm-count">${count}</strong> dead notification${count === 1 ? '' : 's'} of the group: ${group}.
          </p>
          <p>
            They become due now, each with up to ${counted(deps.retry.maxAttempts, 'more attempt')}: their recipients may receive
            them${
              reason === 'suppressed'
                ? html`, except those whose opt-out is still in force: they die as suppressed again (remove the opt-out first, under
                    <a href="/console/opt-outs">Opt-outs</a>)`
                : ''
            }.
            ${dead > retryable ? `${dead - retryable} of the group have expired and stay dead.` : ''}
            ${retryable > count ? `Only the oldest ${count} of ${retryable} are re-queued; retry the group again for the rest.` : ''}
          </p>`,
      );
    }
    // At most as many as the confirmation page said (the oldest first, as it counted them), even
    // when more died since.
    const limit = Math.min(Math.max(Number.parseInt(formText(form, 'count'), 10) || 0, 0), BULK_RETRY_MAX);
    try {
      // The confirmation's nonce is the Idempotency-Key: submitting it again replays the first run.
      const result = await bulkRetry({
        db: deps.db,
        tenantId: s.tenantId,
        filter: { deadReason: reason, lastErrorPrefix: error },
        filterJson: { dead_reason: reason, last_error_prefix: error, limit },
        limit,
        idempotencyKey: `console:${formText(form, 'nonce').slice(0, 40)}`,
        apiKeyId: s.apiKeyId,
        now: deps.clock.now(),
        budget: deps.retry.maxAttempts,
      });
      deps.logger.info(
        { tenantId: s.tenantId, apiKeyId: s.apiKeyId, bulkRetryId: result.id, requeued: result.requeued, replayed: result.replayed },
        'console bulk retry',
      );
      const done = result.requeued === 0 ? 'bulk-none' : result.replayed ? 'bulk-again' : 'bulk';
      return c.redirect(`/console/dead?done=${done}${result.requeued === 0 ? '' : `&n=${result.requeued}`}`, 303);
    } catch (err) {
      if (err instanceof ProblemError) return page(c, { title: 'Not done', status: 422, error: err.message }, html``);
      throw err;
    }
  });
  return app;
}
