import { type Channel, type TransactionLike, inTransaction } from '@notify/outbox';
import { type TemplateProblem, checkTemplate } from '../template.js';
import { templateChannelLock } from './template-channel-lock.js';

/** Parameters of `templateInsert`. */
export interface TemplateInsertParams {
  readonly tenantId: string;
  readonly name: string;
  readonly channel: Channel;
  /** Email only. May use variables. */
  readonly subject?: string | null;
  readonly body: string;
  /** Email only: the HTML alternative. */
  readonly htmlBody?: string | null;
  /**
   * Data to check the template against: when given, a variable it does not resolve is refused
   * (unknown variable, at its position). Stored for previews.
   */
  readonly sampleData?: Record<string, unknown> | null;
  readonly now: Date;
}

/** A template that cannot be stored (syntax, or a field its channel does not have). `code` is stable. */
export class TemplateRejectedError extends Error {
  readonly code = 'template_invalid';
  /** The field at fault: `subject`, `body`, `html_body` or `name`. */
  readonly field: string;
  /** Where in the field, for syntax errors and unknown variables. */
  readonly position: TemplateProblem | undefined;
  constructor(field: string, message: string, options?: { cause?: unknown; position?: TemplateProblem }) {
    super(`${field}: ${message}`, options);
    this.name = 'TemplateRejectedError';
    this.field = field;
    this.position = options?.position;
  }
}

/**
 * A new version in another channel than the template's versions (an API 409
 * `template_channel_conflict`): a notification renders whichever version is active, so a
 * template's versions share one channel. `code` is stable.
 */
export class TemplateChannelConflictError extends Error {
  readonly code = 'template_channel_conflict';
  /** The template's name. */
  readonly template: string;
  /** The channel of the template's newest version. */
  readonly channel: Channel;
  /** The channel the refused version asked for. */
  readonly requested: Channel;
  constructor(template: string, channel: Channel, requested: Channel) {
    super(
      `template "${template}" has channel ${channel}: a new version cannot change it to ${requested}; store the ${requested} text under another name`,
    );
    this.name = 'TemplateChannelConflictError';
    this.template = template;
    this.channel = channel;
    this.requested = requested;
  }
}

/**
 * Stores a new version of a tenant's template (version = previous newest + 1, or 1) and returns
 * the version number. Versions are never changed afterwards; a notification pinned to one keeps
 * rendering the same text. Checks the syntax (throws `TemplateRejectedError`, an API 422).
 *
 * Takes the template's advisory lock first (`templateChannelLock`), so writers of one template run
 * one after the other: concurrent calls get consecutive versions, and a version in another channel
 * than the template's newest one throws `TemplateChannelConflictError`. The lock lasts until the
 * transaction ends: `db` is the caller's transaction (a Kysely transaction, or a `pg` client
 * after BEGIN; READ COMMITTED), or, when it is not in one (a Kysely instance, a pool, a client
 * outside BEGIN), a transaction of its own (`inTransaction`).
 */
export async function templateInsert(db: TransactionLike, params: TemplateInsertParams): Promise<{ version: number }> {
  // The conflict is answered before the checks of the text, as the API always has (409 before 422).
  return inTransaction(db, async (tx) => {
    const channel = await templateChannelLock(tx, { tenantId: params.tenantId, name: params.name });
    if (channel !== undefined && channel !== params.channel) throw new TemplateChannelConflictError(params.name, channel, params.channel);
    if (params.name.trim() === '' || params.name.length > 200) throw new TemplateRejectedError('name', 'must be 1 to 200 characters');
    if (params.channel !== 'email' && (params.subject != null || params.htmlBody != null)) {
      throw new TemplateRejectedError(
        params.subject != null ? 'subject' : 'html_body',
        `only email templates have one (this one is ${params.channel})`,
      );
    }
    const fields: [string, string | null | undefined][] = [
      ['subject', params.subject],
      ['body', params.body],
      ['html_body', params.htmlBody],
    ];
    for (const [field, source] of fields) {
      if (source == null) continue;
      const problem = checkTemplate(source, params.sampleData === undefined ? undefined : params.sampleData);
      if (problem) throw new TemplateRejectedError(field, problem.message, { position: problem });
    }
    const { rows } = await tx.query<{ version: number }>(
      `INSERT INTO templates (tenant_id, name, version, channel, subject, body, html_body, created_at, sample_data)
     SELECT $1, $2, coalesce(max(version), 0) + 1, $3, $4, $5, $6, $7, $8::jsonb
       FROM templates
      WHERE tenant_id = $1 AND name = $2
     RETURNING version`,
      [
        params.tenantId,
        params.name,
        params.channel,
        params.subject ?? null,
        params.body,
        params.htmlBody ?? null,
        params.now,
        params.sampleData == null ? null : JSON.stringify(params.sampleData),
      ],
    );
    return { version: rows[0]!.version };
  });
}
