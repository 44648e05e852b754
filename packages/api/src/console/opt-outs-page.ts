import { Hono } from 'hono';
import { html } from 'hono/html';
import { CHANNELS, type Channel } from '@notify/outbox';
import { addSuppression, decodeSuppressionCursor, encodeSuppressionCursor, removeSuppression } from '../management/suppressions.js';
import { ProblemError } from '../problem.js';
import { suppressionList } from '../sql/suppression-list.js';
import { type ConsoleDeps, type ConsoleEnv, exactField, exactFormText, formText, page } from './context.js';
import { csrfField, time } from './layout.js';

const PAGE_SIZE = 50;

/** Opt-outs: list (cursor), add, remove. */
export function optOutPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  const listPage = async (c: Parameters<typeof page>[0], error?: string) => {
    const s = c.get('session');
    let after: [string, string, string] | undefined;
    try {
      after = c.req.query('cursor') ? decodeSuppressionCursor(c.req.query('cursor')!) : undefined;
    } catch {
      after = undefined;
    }
    const rows = await suppressionList(deps.exec, { tenantId: s.tenantId, after, limit: PAGE_SIZE + 1 });
    const shown = rows.slice(0, PAGE_SIZE);
    const next = rows.length > PAGE_SIZE ? encodeSuppressionCursor(shown[shown.length - 1]!) : undefined;
    return page(
      c,
      { title: 'Opt-outs', active: '/console/opt-outs', error, status: error ? 422 : 200 },
      html`<p>Checked at send time: a notification to an opted-out recipient ends dead with reason <em>suppressed</em>.</p>
        <form method="post" action="/console/opt-outs">
          ${csrfField(s.csrfToken)}
          <fieldset>
            <legend>Add an opt-out</legend>
            <label for="o-channel">Channel</label
            ><select id="o-channel" name="channel">
              ${CHANNELS.map((ch) => html`<option>${ch}</option>`)}
            </select>
            <label for="o-to">Recipient</label><input id="o-to" name="to" required size="30" />
            <label for="o-category">Category (empty: all)</label><input id="o-category" name="category" size="14" />
            <label for="o-reason">Reason</label><input id="o-reason" name="reason" size="20" /> <button type="submit">Add</button>
          </fieldset>
        </form>
        <table>
          <thead>
            <tr>
              <th scope="col">Channel</th>
              <th scope="col">Recipient</th>
              <th scope="col">Category</th>
              <th scope="col">Reason</th>
              <th scope="col">Since</th>
              <th scope="col">Action</th>
            </tr>
          </thead>
          <tbody>
            ${shown.map(
              (r) =>
                html`<tr>
                  <td>${r.channel}</td>
                  <td>${r.recipient}</td>
                  <td>${r.category === '*' ? 'all' : r.category}</td>
                  <td>${r.reason ?? ''}</td>
                  <td>${time(r.created_at)}</td>
                  <td>
                    <form method="post" action="/console/opt-outs/remove">
                      ${csrfField(s.csrfToken)}<input type="hidden" name="channel" value="${r.channel}" /><input
                        type="hidden"
                        name="to"
                        value="${exactField(r.recipient)}"
                      /><input type="hidden" name="category" value="${exactField(r.category)}" />
                      <button
                        type="submit"
                        class="secondary"
                        aria-label="Remove the opt-out of ${r.recipient} (${r.category === '*' ? 'all' : r.category})"
                      >
                        Remove
                      </button>
                    </form>
                  </td>
                </tr>`,
            )}
          </tbody>
        </table>
        ${shown.length === 0 ? html`<p>No opt-outs.</p>` : ''}
        ${next ? html`<p><a href="/console/opt-outs?cursor=${next}" rel="next">More</a></p>` : ''}`,
    );
  };

  app.get('/opt-outs', (c) => listPage(c));

  app.post('/opt-outs', async (c) => {
    const s = c.get('session');
    const form = await c.req.parseBody();
    const channel = formText(form, 'channel');
    const to = formText(form, 'to').trim();
    const category = formText(form, 'category').trim();
    const reason = formText(form, 'reason').trim();
    if (
      !(CHANNELS as readonly string[]).includes(channel) ||
      to === '' ||
      to.length > 2048 ||
      category.length > 100 ||
      reason.length > 500
    ) {
      return listPage(c, 'Give a channel and a recipient (category up to 100 characters, reason up to 500).');
    }
    await addSuppression(
      deps.exec,
      s.tenantId,
      { channel: channel as Channel, to, category: category || undefined, reason: reason || undefined },
      deps.clock.now(),
    );
    return c.redirect('/console/opt-outs?done=added', 303);
  });

  app.post('/opt-outs/remove', async (c) => {
    const s = c.get('session');
    const form = await c.req.parseBody();
    const channel = formText(form, 'channel');
    if (!(CHANNELS as readonly string[]).includes(channel)) return listPage(c, 'Unknown channel.');
    try {
      await removeSuppression(deps.exec, s.tenantId, {
        channel: channel as Channel,
        to: exactFormText(form, 'to'),
        category: exactFormText(form, 'category') || '*',
      });
    } catch (err) {
      if (err instanceof ProblemError) return listPage(c, err.message);
      throw err;
    }
    return c.redirect('/console/opt-outs?done=removed', 303);
  });
  return app;
}
