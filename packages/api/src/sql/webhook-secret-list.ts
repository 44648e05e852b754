import type { SqlExecutor } from '@notify/outbox';

/** A signing secret's metadata (never the secret). */
export interface WebhookSecretRow {
  readonly id: string;
  readonly created_at: Date;
  readonly expires_at: Date | null;
}

/** The tenant's sealed signing secrets that still sign at `now`, newest first. */
export async function webhookSecretList(
  db: SqlExecutor,
  params: { readonly tenantId: string; readonly now: Date },
): Promise<WebhookSecretRow[]> {
  const { rows } = await db.query<WebhookSecretRow>(
    `SELECT id::text AS id, created_at, expires_at FROM tenant_webhook_secrets
      WHERE tenant_id = $1 AND (expires_at IS NULL OR expires_at > $2)
      ORDER BY id DESC`,
    [params.tenantId, params.now],
  );
  return rows;
}
