import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `tenantEnsure`. */
export interface TenantEnsureParams {
  readonly tenantId: string;
  readonly now: Date;
}

/** Creates the tenant's settings row when it does not exist (keys are issued per tenant; settings default to none). */
export async function tenantEnsure(db: SqlExecutor, params: TenantEnsureParams): Promise<void> {
  await db.query('INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [params.tenantId, params.now]);
}
