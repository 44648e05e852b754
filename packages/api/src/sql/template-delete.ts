import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `templateDelete`. */
export interface TemplateDeleteParams {
  readonly tenantId: string;
  readonly name: string;
  readonly version: number;
}

/** What `templateDelete` did. */
export type TemplateDeleteResult =
  | { readonly kind: 'deleted' }
  | { readonly kind: 'not_found' }
  /** Refused: the version is the active one, or queued notifications would render it. */
  | { readonly kind: 'in_use'; readonly reason: string };

/**
 * Deletes one version unless something queued uses it: a queued notification pinned to it, or,
 * when it is the version unpinned notifications render (active, or the newest without an
 * activation), a queued unpinned one. The active version is refused too (activate another first).
 * Runs in the caller's transaction; the template's rows are locked so a concurrent enqueue cannot
 * slip in between the check and the delete of an active version.
 */
export async function templateDelete(db: SqlExecutor, params: TemplateDeleteParams): Promise<TemplateDeleteResult> {
  const { rows } = await db.query<{ version: number; active: boolean; rendered: boolean }>(
    `SELECT t.version, a.version IS NOT NULL AND a.version = t.version AS active,
            t.version = coalesce(a.version, (SELECT max(version) FROM templates WHERE tenant_id = $1 AND name = $2)) AS rendered
       FROM templates t
       LEFT JOIN template_activations a ON a.tenant_id = t.tenant_id AND a.name = t.name
      WHERE t.tenant_id = $1 AND t.name = $2 AND t.version = $3
        FOR UPDATE OF t`,
    [params.tenantId, params.name, params.version],
  );
  const row = rows[0];
  if (!row) return { kind: 'not_found' };
  if (row.active) return { kind: 'in_use', reason: `version ${params.version} is the active version; activate another one first` };
  const { rows: queued } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (
       SELECT 1 FROM notifications
        WHERE tenant_id = $1 AND state = 'queued' AND template = $2
          AND (template_version = $3 OR (template_version IS NULL AND $4::boolean))
        LIMIT 1) q`,
    [params.tenantId, params.name, params.version, row.rendered],
  );
  if (queued[0]!.n > 0) return { kind: 'in_use', reason: `queued notifications render version ${params.version}` };
  await db.query('DELETE FROM templates WHERE tenant_id = $1 AND name = $2 AND version = $3', [
    params.tenantId,
    params.name,
    params.version,
  ]);
  return { kind: 'deleted' };
}
