import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `templateActivate`. */
export interface TemplateActivateParams {
  readonly tenantId: string;
  readonly name: string;
  readonly version: number;
  readonly now: Date;
}

/**
 * Makes `version` the one notifications without a pinned version render from now on (the
 * dispatcher's template cache picks it up within its 5 s). Returns false when the tenant has no
 * such version.
 */
export async function templateActivate(db: SqlExecutor, params: TemplateActivateParams): Promise<boolean> {
  const { rows } = await db.query(
    `INSERT INTO template_activations (tenant_id, name, version, activated_at)
     SELECT tenant_id, name, version, $4 FROM templates WHERE tenant_id = $1 AND name = $2 AND version = $3
     ON CONFLICT (tenant_id, name) DO UPDATE SET version = EXCLUDED.version, activated_at = EXCLUDED.activated_at
     RETURNING 1`,
    [params.tenantId, params.name, params.version, params.now],
  );
  return rows.length > 0;
}
