import { randomBytes } from 'node:crypto';
import { Hono } from 'hono';
import { html } from 'hono/html';
import { DEAD_REASONS } from '@notify/outbox';
import { BULK_RETRY_MAX, bulkRetry } from '../notification-actions.js';
import { ProblemError } from '../problem.js';
import { deadGroupList } from '../sql/dead-group-list.js';
import { type ConsoleDeps, type ConsoleEnv, exactField, exactFormText, formText, page } from './context.js';
import { csrfField } from './layout.js';

/** Dead: notifications grouped by reason and last error, each group with a bulk retry. */
export function deadPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  app.get('/dead', async (c) => {
    const s = c.get('session');
    const groups = await deadGroupList(deps.exec, { tenantId: s.tenantId, limit: 100 });
    return page(
      c,
      { title: 'Dead notifications', active: '/console/dead' },
      html`<p>
          Grouped by reason and the start of the last error, largest group first. A bulk retry re-queues up to
          ${BULK_RETRY_MAX.toLocaleString('en')} of a group (expired ones stay dead).
        </p>
        <table>
          <thead>
            <tr>
              <th scope="col">Reason</th>
              <th scope="col">Last error</th>
              <th scope="col">Count</th>
              <th scope="col">Newest</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            ${groups.map((g, i) => {
              const list = `/console/notifications?state=dead`;
              return html`<tr>
                <td>${g.dead_reason}</td>
                <td>${g.error ?? html`<span class="muted">none</span>`}</td>
                <td><a href="${list}">${g.count}</a></td>
                <td><a href="/console/notifications/${g.newest_id}">${g.newest_id}</a></td>
                <td>
                  ${
                    g.dead_reason === 'expired'
                      ? html`<span class="muted">expired: stays dead</span>`
                      : html`<form method="post" action="/console/dead/retry">
                          ${csrfField(s.csrfToken)}
                          <input type="hidden" name="dead_reason" value="${g.dead_reason}" />
                          <input type="hidden" name="error" value="${exactField(g.error ?? '')}" /><input
                            type="hidden"
                            name="has_error"
                            value="${g.error === null ? '0' : '1'}"
                          />
                          <input type="hidden" name="nonce" value="${randomBytes(12).toString('base64url')}" />
                          <button type="submit" id="bulk-retry-${i}" aria-label="Retry ${g.count}: the dead notifications of this group">
                            Retry ${g.count}
                          </button>
                        </form>`
                  }
                </td>
              </tr>`;
            })}
          </tbody>
        </table>
        ${groups.length === 0 ? html`<p>No dead notifications.</p>` : ''}`,
    );
  });

  app.post('/dead/retry', async (c) => {
    const s = c.get('session');
    const form = await c.req.parseBody();
    const reason = formText(form, 'dead_reason');
    if (!(DEAD_REASONS as readonly string[]).includes(reason))
      return page(c, { title: 'Not done', status: 422, error: 'Unknown dead reason.' }, html``);
    const error = form.has_error === '1' ? exactFormText(form, 'error') : undefined;
    try {
      // The form's nonce is the Idempotency-Key: a double submit re-queues once.
      const result = await bulkRetry({
        db: deps.db,
        tenantId: s.tenantId,
        filter: { deadReason: reason, lastErrorPrefix: error },
        filterJson: { dead_reason: reason, last_error_prefix: error, limit: BULK_RETRY_MAX },
        limit: BULK_RETRY_MAX,
        idempotencyKey: `console:${formText(form, 'nonce').slice(0, 40)}`,
        apiKeyId: s.apiKeyId,
        now: deps.clock.now(),
        budget: deps.retry.maxAttempts,
      });
      deps.logger.info(
        { tenantId: s.tenantId, apiKeyId: s.apiKeyId, bulkRetryId: result.id, requeued: result.requeued },
        'console bulk retry',
      );
      return c.redirect(result.requeued === 0 ? '/console/dead?done=bulk-none' : `/console/dead?done=bulk&n=${result.requeued}`, 303);
    } catch (err) {
      if (err instanceof ProblemError) return page(c, { title: 'Not done', status: 422, error: err.message }, html``);
      throw err;
    }
  });
  return app;
}
