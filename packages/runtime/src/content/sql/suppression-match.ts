import type { Channel, SqlExecutor } from '@notify/outbox';
import { normalizeRecipient } from '../recipient.js';

/** Parameters of `suppressionMatch`. */
export interface SuppressionMatchParams {
  readonly tenantId: string;
  readonly channel: Channel;
  readonly recipient: string;
  /** The notification's category; null matches only channel-wide ('*') opt-outs. */
  readonly category: string | null;
}

/** The opt-out that stops a notification. */
export interface SuppressionRecord {
  readonly category: string;
  readonly reason: string | null;
  readonly createdAt: Date;
}

/**
 * The opt-out that applies to a notification about to be sent, or null: a row for the same
 * tenant, channel and (normalized) recipient whose category is '*' or the notification's own.
 * A channel-wide opt-out wins when both exist. Uses the primary key.
 */
export async function suppressionMatch(db: SqlExecutor, params: SuppressionMatchParams): Promise<SuppressionRecord | null> {
  const { rows } = await db.query<{ category: string; reason: string | null; created_at: Date }>(
    `SELECT category, reason, created_at
       FROM suppressions
      WHERE tenant_id = $1 AND channel = $2 AND recipient = $3
        AND (category = '*' OR category = $4)
      ORDER BY (category = '*') DESC
      LIMIT 1`,
    [params.tenantId, params.channel, normalizeRecipient(params.channel, params.recipient), params.category],
  );
  const row = rows[0];
  return row ? { category: row.category, reason: row.reason, createdAt: row.created_at } : null;
}
