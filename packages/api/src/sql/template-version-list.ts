import type { Channel, SqlExecutor } from '@notify/outbox';

/** A stored template version, with whether it is the one unpinned notifications render. */
export interface TemplateVersionRow {
  readonly name: string;
  readonly version: number;
  readonly channel: Channel;
  readonly subject: string | null;
  readonly body: string;
  readonly html_body: string | null;
  readonly sample_data: Record<string, unknown> | null;
  /** Activated, or (no activation) the newest. */
  readonly active: boolean;
  readonly created_at: Date;
}

/** Parameters of `templateVersionList`. */
export interface TemplateVersionListParams {
  readonly tenantId: string;
  readonly name: string;
  /** One version only. */
  readonly version?: number | undefined;
}

/** The versions of one template, newest first (or the one asked for). Empty when the tenant has no such template. */
export async function templateVersionList(db: SqlExecutor, params: TemplateVersionListParams): Promise<TemplateVersionRow[]> {
  const { rows } = await db.query<TemplateVersionRow>(
    `SELECT t.name, t.version, t.channel, t.subject, t.body, t.html_body, t.sample_data, t.created_at,
            t.version = coalesce(a.version, max(t.version) OVER ()) AS active
       FROM templates t
       LEFT JOIN template_activations a ON a.tenant_id = t.tenant_id AND a.name = t.name
      WHERE t.tenant_id = $1 AND t.name = $2
      ORDER BY t.version DESC`,
    [params.tenantId, params.name],
  );
  return params.version === undefined ? rows : rows.filter((r) => r.version === params.version);
}
