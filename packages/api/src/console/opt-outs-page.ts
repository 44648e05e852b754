import { Hono } from 'hono';
import { html } from 'hono/html';
import { CHANNELS, type Channel } from '@notify/outbox';
import { addSuppression, decodeSuppressionCursor, encodeSuppressionCursor } from '../management/suppressions.js';
import { suppressionList } from '../sql/suppression-list.js';
import { confirmPage, hiddenInputs, isConfirmed } from './confirm.js';
import { type ConsoleDeps, type ConsoleEnv, exactField, exactFormText, formText, page } from './context.js';
import { csrfField, invalidIf, table, time } from './layout.js';
import { cursorParam, listUrl, pagerLinks } from './paging.js';
import { optOutDeleteSeen } from './sql/opt-out-delete-seen.js';
import { optOutPage } from './sql/opt-out-page.js';

const PAGE_SIZE = 50;

/** The fields that name one opt-out as the page showed it: the list's Remove form and its confirmation. */
const optOutFields = (channel: string, recipient: string, category: string, createdAt: Date) => ({
  channel,
  to: exactField(recipient),
  category: exactField(category),
  seen: createdAt.toISOString(),
});

/** Opt-outs: search by recipient, list (keyset pages both ways), add, remove (after a confirmation). */
export function optOutPages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  /**
   * The list; when the add form was refused, `error`, the field it is about (its name) and what was
   * typed, so it is there to correct rather than to type again.
   */
  const listPage = async (c: Parameters<typeof page>[0], error?: string, field?: string, typed: Record<string, string> = {}) => {
    const s = c.get('session');
    const q = c.req.query();
    const search = q.to?.trim() || undefined;
    const at = cursorParam(q);
    let key: [string, string, string] | undefined;
    try {
      key = at ? decodeSuppressionCursor(at.token) : undefined;
    } catch {
      key = undefined;
    }
    const { rows: shown, ...more } = await optOutPage(deps.exec, {
      tenantId: s.tenantId,
      recipientPrefix: search,
      cursor: at && key ? { key, toward: at.toward } : undefined,
      limit: PAGE_SIZE,
    });
    const keep = new URLSearchParams(search ? { to: search } : {});
    // Back at the first rows: the first page itself, full, rather than the few before the cursor.
    if (at?.toward === 'previous' && !more.previous && !error) return c.redirect(listUrl('/console/opt-outs', keep), 303);
    const pager = pagerLinks(
      '/console/opt-outs',
      keep,
      {
        previous: more.previous && shown.length > 0 ? encodeSuppressionCursor(shown[0]!) : undefined,
        next: more.next && shown.length > 0 ? encodeSuppressionCursor(shown[shown.length - 1]!) : undefined,
      },
      { previous: 'Previous', next: 'Next' },
    );
    return page(
      c,
      { title: 'Opt-outs', active: '/console/opt-outs', error, status: error ? 422 : 200 },
      html`<p>Checked at send time: a notification to an opted-out recipient ends dead with reason <em>suppressed</em>.</p>
        <form method="post" action="/console/opt-outs">
          ${csrfField(s.csrfToken)}
          <fieldset>
            <legend>Add an opt-out</legend>
            <label for="o-channel">Channel</label
            ><select id="o-channel" name="channel" ${invalidIf(field === 'channel')}>
              ${CHANNELS.map((ch) => html`<option ${typed.channel === ch ? 'selected' : ''}>${ch}</option>`)}
            </select>
            <label for="o-to">Recipient</label
            ><input id="o-to" name="to" required size="30" value="${typed.to ?? ''}" ${invalidIf(field === 'to')} />
            <label for="o-category">Category (empty: all)</label
            ><input id="o-category" name="category" size="14" value="${typed.category ?? ''}" ${invalidIf(field === 'category')} />
            <label for="o-reason">Reason</label
            ><input id="o-reason" name="reason" size="20" value="${typed.reason ?? ''}" ${invalidIf(field === 'reason')} />
            <button type="submit">Add</button>
          </fieldset>
        </form>
        <form method="get" action="/console/opt-outs" role="search">
          <fieldset>
            <legend>Search</legend>
            <label for="s-to">Recipient starts with</label><input id="s-to" name="to" value="${search ?? ''}" size="30" />
            <button type="submit">Search</button>
          </fieldset>
        </form>
        ${table(
          'opt-outs',
          search ? html`Opt-outs of recipients starting with <q>${search}</q>` : 'Opt-outs',
          ['Channel', 'Recipient', 'Category', 'Reason', 'Since', 'Action'],
          shown.map(
            (r) =>
              html`<tr>
                <td>${r.channel}</td>
                <td class="wrap">${r.recipient}</td>
                <td class="wrap">${r.category === '*' ? 'all' : r.category}</td>
                <td class="wrap">${r.reason ?? ''}</td>
                <td>${time(r.created_at)}</td>
                <td>
                  <form method="post" action="/console/opt-outs/remove">
                    ${csrfField(s.csrfToken)}${hiddenInputs(optOutFields(r.channel, r.recipient, r.category, new Date(r.created_at)))}
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
          ),
        )}
        ${shown.length === 0 ? html`<p>${search ? 'No opt-out matches.' : 'No opt-outs.'}</p>` : ''} ${pager}`,
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
    const wrong = !(CHANNELS as readonly string[]).includes(channel)
      ? 'channel'
      : to === '' || to.length > 2048
        ? 'to'
        : category.length > 100
          ? 'category'
          : reason.length > 500
            ? 'reason'
            : undefined;
    if (wrong !== undefined) {
      return listPage(c, 'Give a channel and a recipient (category up to 100 characters, reason up to 500).', wrong, {
        channel,
        to,
        category,
        reason,
      });
    }
    const result = await addSuppression(
      deps.exec,
      s.tenantId,
      { channel: channel as Channel, to, category: category || undefined, reason: reason || undefined },
      deps.clock.now(),
    );
    if ('problem' in result) return listPage(c, `The recipient ${result.problem}.`, 'to', { channel, to, category, reason });
    return c.redirect('/console/opt-outs?done=added', 303);
  });

  app.post('/opt-outs/remove', async (c) => {
    const s = c.get('session');
    const form = await c.req.parseBody();
    const channel = formText(form, 'channel');
    const seen = new Date(formText(form, 'seen'));
    if (!(CHANNELS as readonly string[]).includes(channel) || Number.isNaN(seen.getTime())) return listPage(c, 'Unknown opt-out.');
    const optOut = {
      tenantId: s.tenantId,
      channel,
      recipient: exactFormText(form, 'to'),
      category: exactFormText(form, 'category') || '*',
    };
    if (!isConfirmed(form)) {
      // Said as stored now: gone already (removed in another tab), there is nothing to confirm.
      const [row] = await suppressionList(deps.exec, { ...optOut, channel: channel as Channel, limit: 1 });
      if (!row) return c.redirect('/console/opt-outs?done=stale', 303);
      const category = optOut.category === '*' ? 'every category' : html`category <strong>${optOut.category}</strong>`;
      return confirmPage(
        c,
        {
          title: 'Remove this opt-out?',
          active: '/console/opt-outs',
          action: '/console/opt-outs/remove',
          back: '/console/opt-outs',
          button: 'Confirm: remove 1 opt-out',
          fields: optOutFields(channel, optOut.recipient, optOut.category, new Date(row.created_at)),
        },
        html`<p>
            This removes the opt-out of <strong>${optOut.recipient}</strong> on ${channel}, ${category}, recorded
            ${time(row.created_at)}${row.reason ? html` (reason: ${row.reason})` : ''}.
          </p>
          <p>Notifications to that recipient are delivered again from now on (those already dead as suppressed stay dead).</p>`,
      );
    }
    // Only the opt-out the page showed: a repeated confirmation, or one after the opt-out was
    // recorded again, removes nothing.
    if (!(await optOutDeleteSeen(deps.exec, { ...optOut, createdAt: seen }))) return c.redirect('/console/opt-outs?done=stale', 303);
    deps.logger.info({ tenantId: s.tenantId, apiKeyId: s.apiKeyId, channel }, 'console opt-out removed');
    return c.redirect('/console/opt-outs?done=removed', 303);
  });
  return app;
}
