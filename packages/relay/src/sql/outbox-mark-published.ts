import { bigintArrayLiteral, timeLiteral } from './literals.js';

/** Parameters of `outboxMarkPublishedText`. */
export interface OutboxMarkPublishedParams {
  /** Outbox ids (bigints as strings). */
  readonly ids: readonly string[];
  readonly now: Date;
}

/**
 * Marks rows published at `now`, as one statement with its values inlined (`literals.ts`), for
 * the claim transaction to send in the same message as its COMMIT. Runs after the broker
 * acknowledged the rows; the commit makes it stick. This is the transaction's first write, so it
 * gets an xid only now, for the moment until the commit.
 */
export function outboxMarkPublishedText(params: OutboxMarkPublishedParams): string {
  return `UPDATE outbox SET published_at = ${timeLiteral(params.now)} WHERE id = ANY (${bigintArrayLiteral(params.ids)}) AND published_at IS NULL`;
}
