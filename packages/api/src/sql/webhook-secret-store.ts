import type { SqlExecutor } from '@notify/outbox';

/**
 * Stores a sealed signing secret of a tenant: current when `expiresAt` is null, else signing until
 * then (a previous secret in its grace). Returns its id. The one writer of `tenant_webhook_secrets`
 * rows for a rotation and for `webhookSecretSealLegacy`.
 */
export async function webhookSecretStore(
  db: SqlExecutor,
  row: { readonly tenantId: string; readonly sealed: string; readonly createdAt: Date; readonly expiresAt: Date | null },
): Promise<string> {
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO tenant_webhook_secrets (tenant_id, sealed, created_at, expires_at) VALUES ($1, $2, $3, $4) RETURNING id::text AS id',
    [row.tenantId, row.sealed, row.createdAt, row.expiresAt],
  );
  return rows[0]!.id;
}

/** Clears a tenant's legacy plaintext secret (`tenants.webhook_signing_secret`) once it is stored sealed. */
export async function legacySecretClear(db: SqlExecutor, tenantId: string): Promise<void> {
  await db.query('UPDATE tenants SET webhook_signing_secret = NULL WHERE id = $1', [tenantId]);
}
