import type { Channel, SqlExecutor } from '@notify/outbox';

/** A template name of a tenant, summarised. */
export interface TemplateSummaryRow {
  readonly name: string;
  readonly channel: Channel;
  readonly latest_version: number;
  readonly active_version: number | null;
  readonly versions: number;
  readonly updated_at: Date;
}

/** Every template name of the tenant with its newest and active version, by name. Served by the templates primary key. */
export async function templateList(db: SqlExecutor, params: { readonly tenantId: string }): Promise<TemplateSummaryRow[]> {
  const { rows } = await db.query<TemplateSummaryRow>(
    `SELECT t.name,
            (array_agg(t.channel ORDER BY t.version DESC))[1] AS channel,
            max(t.version)::int AS latest_version,
            a.version AS active_version,
            count(*)::int AS versions,
            max(t.created_at) AS updated_at
       FROM templates t
       LEFT JOIN template_activations a ON a.tenant_id = t.tenant_id AND a.name = t.name
      WHERE t.tenant_id = $1
      GROUP BY t.name, a.version
      ORDER BY t.name`,
    [params.tenantId],
  );
  return rows;
}
