import type { Channel, SqlExecutor } from '@notify/outbox';
import { normalizeRecipient } from '../recipient.js';

/** Parameters of `suppressionDelete`. */
export interface SuppressionDeleteParams {
  readonly tenantId: string;
  readonly channel: Channel;
  readonly recipient: string;
  /** The category to lift, or '*' (the default) for the channel-wide opt-out. */
  readonly category?: string;
}

/** Removes one opt-out (consent given again). Returns whether a row was removed. */
export async function suppressionDelete(db: SqlExecutor, params: SuppressionDeleteParams): Promise<boolean> {
  const { rows } = await db.query(
    `DELETE FROM suppressions
      WHERE tenant_id = $1 AND channel = $2 AND recipient = $3 AND category = $4
     RETURNING 1 AS removed`,
    [params.tenantId, params.channel, normalizeRecipient(params.channel, params.recipient), params.category ?? '*'],
  );
  return rows.length > 0;
}
