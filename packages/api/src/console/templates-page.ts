import { Hono } from 'hono';
import { html, raw } from 'hono/html';
import { CHANNELS, fromKysely } from '@notify/outbox';
import { createTemplateVersion, previewTemplate } from '../management/templates.js';
import { TemplateCreate } from '../management-schemas.js';
import { parseBody } from '../validate.js';
import { PROBLEM_CATALOG, ProblemError } from '../problem.js';
import { templateActivate } from '../sql/template-activate.js';
import { templateList } from '../sql/template-list.js';
import { templateVersionList } from '../sql/template-version-list.js';
import { templateActivationGet } from './sql/template-activation-get.js';
import { confirmPage, isConfirmed } from './confirm.js';
import { type ConsoleDeps, type ConsoleEnv, formText, notFoundPage, page } from './context.js';
import { type Html, csrfField, invalidIf, table, time } from './layout.js';

/** A form field holding a JSON object; `name` is the field's name, `label` how the error calls it. */
function jsonField(raw: unknown, name: string, label: string): Record<string, unknown> | undefined {
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (text === '') return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new ProblemError('validation_failed', `${label} is not JSON`, { extensions: { field: name } });
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    throw new ProblemError('validation_failed', `${label} must be a JSON object`, { extensions: { field: name } });
  return v as Record<string, unknown>;
}

interface Refusal {
  readonly status: 409 | 422;
  readonly text: string;
  /** The form field it is about (its name), when one is. */
  readonly field: string | undefined;
}

/** A refusal as the page shows it: its status (409 for a version of another channel, else 422 mostly), one line of text, and the field it is about. */
const refusal = (err: ProblemError): Refusal => {
  const errors = err.extensions.errors as { path: string }[] | undefined;
  const field = errors?.[0]?.path ?? err.extensions.field;
  return {
    status: PROBLEM_CATALOG[err.code].status === 409 ? 409 : 422,
    text: problemText(err),
    field: typeof field === 'string' ? field : undefined,
  };
};

/** A refusal as one line: a template error's position, else every field issue, else the message. */
const problemText = (err: ProblemError) => {
  const errors = err.extensions.errors as { path: string; message: string; line?: number; column?: number }[] | undefined;
  const e = errors?.[0];
  if (e?.line !== undefined) return `${e.path}, line ${e.line}, column ${e.column}: ${e.message}`;
  return errors && errors.length > 0 ? errors.map((i) => `${i.path}: ${i.message}`).join('; ') : err.message;
};

/** Templates: list and create; one template's versions, activation and preview. */
export function templatePages(deps: ConsoleDeps): Hono<ConsoleEnv> {
  const app = new Hono<ConsoleEnv>();

  const listPage = async (c: Parameters<typeof page>[0], error?: Refusal, form: Record<string, string> = {}) => {
    const s = c.get('session');
    const rows = await templateList(deps.exec, { tenantId: s.tenantId });
    // The field the error is about; the body when the error names none of the form's.
    const fields = ['name', 'channel', 'subject', 'body', 'html_body', 'sample_data'];
    const wrong = error ? (fields.includes(error.field ?? '') ? error.field : 'body') : undefined;
    const invalid = (name: string) => invalidIf(wrong === name);
    return page(
      c,
      { title: 'Templates', active: '/console/templates', error: error?.text, status: error?.status ?? 200 },
      html`${table(
          'templates',
          'Templates',
          ['Name', 'Channel', 'Newest', 'Active', 'Versions', 'Updated'],
          rows.map(
            (r) =>
              html`<tr>
                <td><a href="/console/templates/${encodeURIComponent(r.name)}">${r.name}</a></td>
                <td>${r.channel}</td>
                <td>${r.latest_version}</td>
                <td>${r.active_version ?? html`<span class="muted">newest</span>`}</td>
                <td>${r.versions}</td>
                <td>${time(r.updated_at)}</td>
              </tr>`,
          ),
          { hidden: true },
        )}
        ${rows.length === 0 ? html`<p>No templates yet.</p>` : ''}
        <h2>New template version</h2>
        <form method="post" action="/console/templates">
          ${csrfField(s.csrfToken)}
          <p>
            <label for="t-name">Name</label><input id="t-name" name="name" required value="${form.name ?? ''}" ${invalid('name')} />
            <label for="t-channel">Channel</label
            ><select id="t-channel" name="channel" ${invalid('channel')}>
              ${CHANNELS.map((ch) => html`<option ${form.channel === ch ? 'selected' : ''}>${ch}</option>`)}
            </select>
          </p>
          <p>
            <label for="t-subject">Subject (email only)</label
            ><input id="t-subject" name="subject" size="60" value="${form.subject ?? ''}" ${invalid('subject')} />
          </p>
          <p>
            <label for="t-body">Body, with {{variables}}</label
            ><textarea id="t-body" name="body" required ${invalid('body')}>${form.body ?? ''}</textarea>
          </p>
          <p>
            <label for="t-html">HTML body (email only, optional; values are HTML-escaped)</label
            ><textarea id="t-html" name="html_body" ${invalid('html_body')}>${form.html_body ?? ''}</textarea>
          </p>
          <p>
            <label for="t-sample">Sample data (JSON; every variable must resolve in it)</label
            ><textarea id="t-sample" name="sample_data" ${invalid('sample_data')}>${form.sample_data ?? ''}</textarea>
          </p>
          <p>
            <input type="checkbox" id="t-activate" name="activate" value="1" ${form.activate === '1' ? raw('checked') : ''} />
            <label for="t-activate">Activate this version</label>
          </p>
          <p class="muted">
            Unchecked, the active version stays; a template none of whose versions was ever activated sends its newest version, this one.
          </p>
          <p><button type="submit">Store version</button></p>
        </form>`,
    );
  };

  app.get('/templates', (c) => listPage(c));

  app.post('/templates', async (c) => {
    const s = c.get('session');
    const form = await c.req.parseBody();
    const str = (k: string) => formText(form, k);
    try {
      const sampleData = jsonField(form.sample_data, 'sample_data', 'sample data');
      // The API's own schema (channel, name, lengths), so a version made here is one POST /v1/templates takes.
      const version = parseBody(
        TemplateCreate,
        {
          name: str('name'),
          channel: str('channel'),
          ...(str('subject') ? { subject: str('subject') } : {}),
          body: str('body'),
          ...(str('html_body') ? { html_body: str('html_body') } : {}),
          ...(sampleData ? { sample_data: sampleData } : {}),
          activate: form.activate === '1',
        },
        'template version',
      );
      const created = await deps.db
        .transaction()
        .execute((trx) => createTemplateVersion(fromKysely(trx), s.tenantId, version, deps.clock.now()));
      return c.redirect(`/console/templates/${encodeURIComponent(created.name)}?done=created`, 303);
    } catch (err) {
      if (err instanceof ProblemError) {
        return listPage(
          c,
          refusal(err),
          Object.fromEntries(['name', 'channel', 'subject', 'body', 'html_body', 'sample_data', 'activate'].map((k) => [k, str(k)])),
        );
      }
      throw err;
    }
  });

  const detailPage = async (
    c: Parameters<typeof page>[0],
    name: string,
    opts: { preview?: Html; error?: Refusal; typed?: { version: string; data: string } } = {},
  ) => {
    const { preview = '', error, typed } = opts;
    const s = c.get('session');
    const versions = await templateVersionList(deps.exec, { tenantId: s.tenantId, name });
    if (versions.length === 0) return notFoundPage(c, `template ${name}`);
    return page(
      c,
      { title: `Template ${name}`, active: '/console/templates', error: error?.text, status: error?.status ?? 200 },
      html`${table(
          'versions',
          `Versions of ${name}`,
          ['Version', 'Channel', 'Subject', 'Body', 'Created', 'Active'],
          versions.map(
            (v) =>
              html`<tr>
                <td>${v.version}</td>
                <td>${v.channel}</td>
                <td class="wrap">${v.subject ?? ''}</td>
                <td>
                  <pre>${v.body}</pre>
                  ${
                    v.html_body !== null
                      ? html`<p class="muted">HTML body:</p>
                          <pre>${v.html_body}</pre>`
                      : ''
                  }
                </td>
                <td>${time(v.created_at)}</td>
                <td>
                  ${v.active ? html`<strong>active</strong>` : html`<form method="post" action="/console/templates/${encodeURIComponent(name)}/activate">${csrfField(s.csrfToken)}<input type="hidden" name="version" value="${v.version}" /><button type="submit" class="secondary" aria-label="Activate version ${v.version}">Activate</button></form>`}
                </td>
              </tr>`,
          ),
          { hidden: true },
        )}
        <h2>Preview</h2>
        <form method="post" action="/console/templates/${encodeURIComponent(name)}/preview">
          ${csrfField(s.csrfToken)}
          <p>
            <label for="p-version">Version</label
            ><select id="p-version" name="version">
              ${versions.map((v) => {
                // What the operator previewed stays selected; first, the active version.
                const selected =
                  typed !== undefined && versions.some((o) => String(o.version) === typed.version)
                    ? String(v.version) === typed.version
                    : v.active;
                return html`<option value="${v.version}" ${selected ? 'selected' : ''}>${v.version}${v.active ? ' (active)' : ''}</option>`;
              })}
            </select>
          </p>
          <p>
            <label for="p-data">Data (JSON; empty: the version's sample data)</label
            ><textarea id="p-data" name="data" ${invalidIf(error !== undefined)}>${typed?.data ?? ''}</textarea>
          </p>
          <p><button type="submit">Preview</button></p>
        </form>
        ${preview}`,
    );
  };

  app.get('/templates/:name', (c) => detailPage(c, c.req.param('name')));

  app.post('/templates/:name/activate', async (c) => {
    const s = c.get('session');
    const name = c.req.param('name');
    const form = await c.req.parseBody();
    const version = Number(form.version);
    const versions = await templateVersionList(deps.exec, { tenantId: s.tenantId, name });
    const chosen = versions.find((v) => v.version === version);
    if (!chosen) return notFoundPage(c, `template ${name} version ${version}`);
    const active = versions.find((v) => v.active)!.version;
    // The state the confirmation is made against: the active version, and when it was activated
    // (another activation in between, even of the same version, makes it stale).
    const activatedAt = await templateActivationGet(deps.exec, { tenantId: s.tenantId, name });
    const seen = `${active}.${activatedAt ? new Date(activatedAt).getTime() : 'newest'}`;
    const detail = `/console/templates/${encodeURIComponent(name)}`;
    if (!isConfirmed(form)) {
      return confirmPage(
        c,
        {
          title: `Activate version ${version}?`,
          active: '/console/templates',
          action: `${detail}/activate`,
          back: detail,
          button: `Confirm: activate version ${version}`,
          fields: { version: String(version), seen },
        },
        html`<p>
            This makes version <strong>${version}</strong> of template <strong>${name}</strong> the active one, instead of version
            ${active}.
          </p>
          <p>
            Every notification without a pinned version renders it from now on (the dispatcher picks it up within 5 s), including those
            already queued.
          </p>`,
      );
    }
    // Confirmed twice, or after another version was activated or created meanwhile: change nothing.
    if (formText(form, 'seen') !== seen) return c.redirect(`${detail}?done=stale`, 303);
    await templateActivate(deps.exec, { tenantId: s.tenantId, name, version, now: deps.clock.now() });
    deps.logger.info({ tenantId: s.tenantId, apiKeyId: s.apiKeyId, template: name, version }, 'console template activated');
    return c.redirect(`${detail}?done=activated`, 303);
  });

  app.post('/templates/:name/preview', async (c) => {
    const s = c.get('session');
    const name = c.req.param('name');
    const form = await c.req.parseBody();
    const typed = { version: formText(form, 'version'), data: formText(form, 'data') };
    try {
      const version = Number(form.version);
      const r = await previewTemplate(deps.exec, s.tenantId, name, {
        version: Number.isInteger(version) ? version : undefined,
        data: jsonField(form.data, 'data', 'data'),
      });
      return detailPage(c, name, {
        typed,
        preview: html`<section aria-labelledby="preview-h">
          <h3 id="preview-h">Rendered version ${r.version}</h3>
          ${r.subject !== null ? html`<p><strong>Subject:</strong> <span id="preview-subject">${r.subject}</span></p>` : ''}
          <pre id="preview-body">${r.body}</pre>
          ${
            r.html_body !== null
              ? html`<p><strong>HTML body</strong> (its source, not rendered):</p>
                  <pre id="preview-html">${r.html_body}</pre>`
              : ''
          }
        </section>`,
      });
    } catch (err) {
      if (err instanceof ProblemError) return detailPage(c, name, { typed, error: refusal(err) });
      throw err;
    }
  });
  return app;
}
