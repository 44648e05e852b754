import type { SqlExecutor } from '@notify/outbox';
import { legacySecretClear, webhookSecretStore } from './webhook-secret-store.js';

/** Parameters of `webhookSecretRotate`. */
export interface WebhookSecretRotateParams {
  readonly tenantId: string;
  /** The new secret, already sealed (AES-256-GCM under NOTIFY_SECRETS_KEY). */
  readonly sealed: string;
  /** The legacy plaintext secret sealed the same way, in case the tenant still has one (read under the lock). */
  readonly sealLegacy: (plain: string) => string;
  /**
   * NOTIFY_WEBHOOK_SECRET sealed for this tenant, when the API has one: what signed the tenant's
   * webhooks while it had no secret of its own, kept for the grace period by its first rotation.
   */
  readonly sealedGlobal: string | undefined;
  readonly now: Date;
  /** The previous secret's last moment of signing. */
  readonly graceUntil: Date;
}

/**
 * Rotates in the caller's transaction: the tenant's row is locked (concurrent rotations queue);
 * the current sealed secret gets `expires_at = graceUntil`; a legacy plaintext secret
 * (tenants.webhook_signing_secret) is sealed into a row with the same grace and the column
 * cleared; a tenant with neither, whose webhooks NOTIFY_WEBHOOK_SECRET signed, gets that secret
 * (`sealedGlobal`) as a row with the same grace, so its receivers are not cut off at once; the new
 * secret is inserted as current. Returns its id and the previous one's end.
 */
export async function webhookSecretRotate(
  db: SqlExecutor,
  params: WebhookSecretRotateParams,
): Promise<{ id: string; previousExpiresAt: Date | null }> {
  await db.query('INSERT INTO tenants (id, created_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING', [params.tenantId, params.now]);
  const { rows: tenant } = await db.query<{ webhook_signing_secret: string | null }>(
    'SELECT webhook_signing_secret FROM tenants WHERE id = $1 FOR UPDATE',
    [params.tenantId],
  );
  const { rows: retired } = await db.query(
    `UPDATE tenant_webhook_secrets SET expires_at = $2
      WHERE tenant_id = $1 AND (expires_at IS NULL OR expires_at > $2)
     RETURNING id`,
    [params.tenantId, params.graceUntil],
  );
  const legacy = tenant[0]?.webhook_signing_secret ?? null;
  // What signed until now without a sealed row of its own, kept for the grace: the legacy
  // plaintext secret, or, for a tenant with no secret at all, NOTIFY_WEBHOOK_SECRET.
  const kept = legacy !== null ? params.sealLegacy(legacy) : retired.length === 0 ? params.sealedGlobal : undefined;
  if (kept !== undefined) {
    await webhookSecretStore(db, { tenantId: params.tenantId, sealed: kept, createdAt: params.now, expiresAt: params.graceUntil });
  }
  if (legacy !== null) await legacySecretClear(db, params.tenantId);
  const id = await webhookSecretStore(db, { tenantId: params.tenantId, sealed: params.sealed, createdAt: params.now, expiresAt: null });
  return { id, previousExpiresAt: retired.length > 0 || kept !== undefined ? params.graceUntil : null };
}
