import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `tenantSigningSecretsGet`. */
export interface TenantSigningSecretsGetParams {
  readonly tenantId: string;
  /** Secrets whose grace period ended before this instant are left out. */
  readonly now: Date;
}

/** One signing secret of a tenant as stored: sealed (tenant_webhook_secrets) or legacy plaintext (tenants.webhook_signing_secret). */
export interface StoredSigningSecret {
  readonly sealed: string | null;
  readonly plain: string | null;
  /** When it stops signing (end of a rotation's grace period); null for the current secret. */
  readonly expiresAt: Date | null;
}

/**
 * The tenant's webhook signing secrets that still sign, newest first: the sealed ones of
 * `tenant_webhook_secrets` (migration 0030) whose grace period has not ended, then the legacy
 * plaintext column until the first rotation clears it. Empty: the global NOTIFY_WEBHOOK_SECRET applies.
 */
export async function tenantSigningSecretsGet(db: SqlExecutor, params: TenantSigningSecretsGetParams): Promise<StoredSigningSecret[]> {
  const { rows } = await db.query<{ sealed: string | null; plain: string | null; expires_at: Date | null }>(
    `SELECT sealed, NULL::text AS plain, expires_at, id AS ord
       FROM tenant_webhook_secrets
      WHERE tenant_id = $1 AND (expires_at IS NULL OR expires_at > $2)
     UNION ALL
     SELECT NULL, webhook_signing_secret, NULL, 0
       FROM tenants
      WHERE id = $1 AND webhook_signing_secret IS NOT NULL
     ORDER BY ord DESC`,
    [params.tenantId, params.now],
  );
  return rows.map((r) => ({ sealed: r.sealed, plain: r.plain, expiresAt: r.expires_at }));
}
