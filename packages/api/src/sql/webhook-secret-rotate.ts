import type { SqlExecutor } from '@notify/outbox';

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
  let previous = retired.length > 0;
  const legacy = tenant[0]?.webhook_signing_secret ?? null;
  if (legacy !== null) {
    await db.query('INSERT INTO tenant_webhook_secrets (tenant_id, sealed, created_at, expires_at) VALUES ($1, $2, $3, $4)', [
      params.tenantId,
      params.sealLegacy(legacy),
      params.now,
      params.graceUntil,
    ]);
    await db.query('UPDATE tenants SET webhook_signing_secret = NULL WHERE id = $1', [params.tenantId]);
    previous = true;
  }
  if (!previous && params.sealedGlobal !== undefined) {
    await db.query('INSERT INTO tenant_webhook_secrets (tenant_id, sealed, created_at, expires_at) VALUES ($1, $2, $3, $4)', [
      params.tenantId,
      params.sealedGlobal,
      params.now,
      params.graceUntil,
    ]);
    previous = true;
  }
  const { rows } = await db.query<{ id: string }>(
    'INSERT INTO tenant_webhook_secrets (tenant_id, sealed, created_at) VALUES ($1, $2, $3) RETURNING id::text AS id',
    [params.tenantId, params.sealed, params.now],
  );
  return { id: rows[0]!.id, previousExpiresAt: previous ? params.graceUntil : null };
}
