import { type SqlExecutor } from '@notify/outbox';
import { TemplateChannelConflictError, TemplateRejectedError, renderTemplate, templateInsert } from '@notify/runtime';
import { ProblemError } from '../problem.js';
import type { TemplateCreate, TemplatePreview, TemplateVersion } from '../management-schemas.js';
import { templateActivate } from '../sql/template-activate.js';
import { templateVersionList, type TemplateVersionRow } from '../sql/template-version-list.js';

// Template management shared by the /v1/templates routes and the console's forms: one
// implementation of each operation, tenant-scoped by the caller.

/** A template version row as the API shows it. */
export function templateVersionView(r: TemplateVersionRow): TemplateVersion {
  return {
    name: r.name,
    version: r.version,
    channel: r.channel,
    subject: r.subject,
    body: r.body,
    html_body: r.html_body,
    sample_data: r.sample_data,
    active: r.active,
    created_at: new Date(r.created_at).toISOString(),
  };
}

/**
 * Stores a new version (and activates it when asked). `db` must be a READ COMMITTED transaction:
 * the template's lock, which `templateInsert` takes, lasts until it ends. A version whose channel is not
 * the channel of the template's newest version is a 409 `template_channel_conflict`: a
 * notification renders whichever version is active, so a template's versions share one channel.
 * A template that does not parse, or uses a variable `sample_data` lacks, is a 422
 * `template_invalid` whose `errors` name the field and the position (offset, line, column).
 */
export async function createTemplateVersion(db: SqlExecutor, tenantId: string, input: TemplateCreate, now: Date): Promise<TemplateVersion> {
  let version: number;
  try {
    ({ version } = await templateInsert(db, {
      tenantId,
      name: input.name,
      channel: input.channel,
      subject: input.subject ?? null,
      body: input.body,
      htmlBody: input.html_body ?? null,
      ...(input.sample_data !== undefined ? { sampleData: input.sample_data } : {}),
      now,
    }));
  } catch (err) {
    if (err instanceof TemplateChannelConflictError) {
      throw new ProblemError('template_channel_conflict', err.message, {
        extensions: { errors: [{ path: 'channel', message: `must be ${err.channel}, the channel of the template's versions` }] },
      });
    }
    if (err instanceof TemplateRejectedError) {
      const p = err.position;
      throw new ProblemError('template_invalid', err.message, {
        extensions: {
          errors: [
            { path: err.field, message: p?.message ?? err.message, ...(p ? { offset: p.offset, line: p.line, column: p.column } : {}) },
          ],
        },
      });
    }
    throw err;
  }
  if (input.activate) await templateActivate(db, { tenantId, name: input.name, version, now });
  const [row] = await templateVersionList(db, { tenantId, name: input.name, version });
  return templateVersionView(row!);
}

/** Renders one version (the rendered one by default) with `data` (the version's sample data by default), as a send would. 404 without the version, 422 when it does not render. */
export async function previewTemplate(
  db: SqlExecutor,
  tenantId: string,
  name: string,
  options: { version?: number | undefined; data?: Record<string, unknown> | undefined },
): Promise<TemplatePreview> {
  const rows = await templateVersionList(db, { tenantId, name });
  const row = options.version === undefined ? rows.find((r) => r.active) : rows.find((r) => r.version === options.version);
  if (!row)
    throw new ProblemError('not_found', `no template "${name}"${options.version !== undefined ? ` version ${options.version}` : ''}`);
  const data = options.data ?? row.sample_data ?? {};
  const render = (field: string, source: string | null, mode: 'text' | 'html') => {
    if (source === null) return null;
    const r = renderTemplate(source, data, mode);
    if (!r.ok)
      throw new ProblemError('template_invalid', `${field}: ${r.error}`, { extensions: { errors: [{ path: field, message: r.error }] } });
    return r.text;
  };
  return {
    name,
    version: row.version,
    subject: render('subject', row.subject, 'text'),
    body: render('body', row.body, 'text')!,
    html_body: render('html_body', row.html_body, 'html'),
  };
}
