import type { SqlExecutor } from '@notify/outbox';

/** What `webhookSecretExpire` found: `expired`, `current` (it has no end: rotate instead) or `missing`. */
export type WebhookSecretExpireOutcome = 'expired' | 'current' | 'missing';

/**
 * Ends a previous signing secret's grace period at `now`: it stops signing (within the
 * dispatcher's 30 s cache of a tenant's secrets). Only a secret still in its grace period is
 * touched; the current one (no `expires_at`) is left alone and reported as such, so a tenant is
 * never left without a secret by this call. Another tenant's secret or one that ended already is
 * `missing`, exactly like an id that does not exist.
 */
export async function webhookSecretExpire(
  db: SqlExecutor,
  params: { readonly tenantId: string; readonly id: string; readonly now: Date },
): Promise<WebhookSecretExpireOutcome> {
  const { rows } = await db.query<{ current: boolean; expired: boolean }>(
    `WITH hit AS (
       SELECT id, expires_at IS NULL AS current FROM tenant_webhook_secrets
        WHERE tenant_id = $1 AND id = $2::bigint AND (expires_at IS NULL OR expires_at > $3)
     ), ended AS (
       UPDATE tenant_webhook_secrets s SET expires_at = $3
         FROM hit WHERE s.id = hit.id AND NOT hit.current
       RETURNING s.id
     )
     SELECT hit.current, EXISTS (SELECT 1 FROM ended) AS expired FROM hit`,
    [params.tenantId, params.id, params.now],
  );
  const row = rows[0];
  if (!row) return 'missing';
  return row.current ? 'current' : 'expired';
}
