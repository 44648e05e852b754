import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `tenantSigningSecretGet`. */
export interface TenantSigningSecretGetParams {
  readonly tenantId: string;
}

/**
 * The tenant's webhook signing secret (`tenants.webhook_signing_secret`), or null when the
 * tenant has no row or no secret (the global NOTIFY_WEBHOOK_SECRET applies then).
 */
export async function tenantSigningSecretGet(db: SqlExecutor, params: TenantSigningSecretGetParams): Promise<string | null> {
  const { rows } = await db.query<{ webhook_signing_secret: string | null }>(
    'SELECT webhook_signing_secret FROM tenants WHERE id = $1',
    [params.tenantId],
  );
  return rows[0]?.webhook_signing_secret ?? null;
}
