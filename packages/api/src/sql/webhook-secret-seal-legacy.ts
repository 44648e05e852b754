import type { SqlExecutor } from '@notify/outbox';
import { legacySecretClear, webhookSecretStore } from './webhook-secret-store.js';

/** Parameters of `webhookSecretSealLegacy`. */
export interface WebhookSecretSealLegacyParams {
  /** Seals a tenant's plaintext secret (AES-256-GCM under NOTIFY_SECRETS_KEY, bound to the tenant id). */
  readonly seal: (tenantId: string, plain: string) => string;
  readonly now: Date;
  /** Only report what would be sealed; nothing is written. */
  readonly dryRun: boolean;
}

/** What `webhookSecretSealLegacy` did, by tenant id (sorted). */
export interface WebhookSecretSealLegacyResult {
  /** The legacy plaintext secret is now the tenant's current sealed secret (dry run: would be). */
  readonly sealed: readonly string[];
  /**
   * Left as they were: the tenant has a current sealed secret as well as the plaintext one (only
   * SQL written by hand makes that: a rotation clears the plaintext in its own transaction).
   * Sealing it too would give the tenant two current secrets; a rotation settles it.
   */
  readonly skipped: readonly string[];
}

/**
 * Seals every tenant's legacy plaintext signing secret (`tenants.webhook_signing_secret`, from
 * before migration 0030) as that tenant's current secret in `tenant_webhook_secrets`, and clears
 * the column: the same secret signs as before, so receivers change nothing, and no secret is left
 * unencrypted at rest. In the caller's transaction; the tenants' rows are locked, so a rotation
 * running meanwhile waits and then finds the column cleared (it rotates the sealed secret instead).
 */
export async function webhookSecretSealLegacy(
  db: SqlExecutor,
  params: WebhookSecretSealLegacyParams,
): Promise<WebhookSecretSealLegacyResult> {
  const { rows } = await db.query<{ id: string; plain: string; has_current: boolean }>(
    `SELECT t.id, t.webhook_signing_secret AS plain,
            EXISTS (SELECT 1 FROM tenant_webhook_secrets s WHERE s.tenant_id = t.id AND s.expires_at IS NULL) AS has_current
       FROM tenants t
      WHERE t.webhook_signing_secret IS NOT NULL
      ORDER BY t.id
        FOR UPDATE OF t`,
    [],
  );
  const sealed: string[] = [];
  const skipped: string[] = [];
  for (const row of rows) {
    if (row.has_current) {
      skipped.push(row.id);
      continue;
    }
    sealed.push(row.id);
    if (params.dryRun) continue;
    await webhookSecretStore(db, { tenantId: row.id, sealed: params.seal(row.id, row.plain), createdAt: params.now, expiresAt: null });
    await legacySecretClear(db, row.id);
  }
  return { sealed, skipped };
}
