import type { Channel, SqlExecutor } from '@notify/outbox';
import { normalizeRecipient } from '../recipient.js';

/** Parameters of `suppressionInsert`. */
export interface SuppressionInsertParams {
  readonly tenantId: string;
  readonly channel: Channel;
  /** Normalized before storing (email addresses are lower-cased). */
  readonly recipient: string;
  /** A category, or '*' (the default) for every category of the channel. */
  readonly category?: string;
  /** Why (e.g. "unsubscribe link", "hard bounce"); shown in the notification's last error. */
  readonly reason?: string | null;
  readonly now: Date;
}

/**
 * Records an opt-out. Idempotent: recording the same (tenant, channel, recipient, category)
 * again only updates the reason. Takes effect for every notification not yet sent (checked at send time).
 */
export async function suppressionInsert(db: SqlExecutor, params: SuppressionInsertParams): Promise<void> {
  await db.query(
    `INSERT INTO suppressions (tenant_id, channel, recipient, category, reason, created_at)
     VALUES ($1, $2, $3, $4, $5, $6)
     ON CONFLICT (tenant_id, channel, recipient, category) DO UPDATE SET reason = EXCLUDED.reason`,
    [
      params.tenantId,
      params.channel,
      normalizeRecipient(params.channel, params.recipient),
      params.category ?? '*',
      params.reason ?? null,
      params.now,
    ],
  );
}
