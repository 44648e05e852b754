import type { Channel, SqlExecutor } from '@notify/outbox';

/** Parameters of `templateGet`. */
export interface TemplateGetParams {
  readonly tenantId: string;
  readonly name: string;
  /** A pinned version, or null for the activated version (else the newest). */
  readonly version: number | null;
}

/** A stored template version. */
export interface TemplateRecord {
  readonly tenantId: string;
  readonly name: string;
  readonly version: number;
  readonly channel: Channel;
  readonly subject: string | null;
  /** Plain text (email: the text/plain part). */
  readonly body: string;
  /** Email only: the HTML alternative, rendered with escaping. */
  readonly htmlBody: string | null;
  readonly createdAt: Date;
}

/** One template version: the pinned one, or when `version` is null the activated one, else the newest. Null when absent. */
export async function templateGet(db: SqlExecutor, params: TemplateGetParams): Promise<TemplateRecord | null> {
  const { rows } = await db.query<{
    tenant_id: string;
    name: string;
    version: number;
    channel: Channel;
    subject: string | null;
    body: string;
    html_body: string | null;
    created_at: Date;
  }>(
    // Unpinned: the activated version (template_activations, migration 0030), else the newest.
    `SELECT tenant_id, name, version, channel, subject, body, html_body, created_at
       FROM templates t
      WHERE tenant_id = $1 AND name = $2
        AND ($3::int IS NULL OR version = $3::int)
        AND ($3::int IS NOT NULL
             OR NOT EXISTS (SELECT 1 FROM template_activations a WHERE a.tenant_id = $1 AND a.name = $2)
             OR version = (SELECT a.version FROM template_activations a WHERE a.tenant_id = $1 AND a.name = $2))
      ORDER BY version DESC
      LIMIT 1`,
    [params.tenantId, params.name, params.version],
  );
  const row = rows[0];
  if (!row) return null;
  return {
    tenantId: row.tenant_id,
    name: row.name,
    version: row.version,
    channel: row.channel,
    subject: row.subject,
    body: row.body,
    htmlBody: row.html_body,
    createdAt: row.created_at,
  };
}
