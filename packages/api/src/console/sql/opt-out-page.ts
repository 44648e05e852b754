import type { SqlExecutor } from '@notify/outbox';
import type { SuppressionRow } from '../../sql/suppression-list.js';
import { type KeysetCursor, type KeysetPage, keysetPage, likePrefix } from '../paging.js';

/** Parameters of `optOutPage`. */
export interface OptOutPageParams {
  readonly tenantId: string;
  /** Recipients starting with this, compared lower-cased (migration 0330's index). */
  readonly recipientPrefix?: string | undefined;
  /** `next`: after this (channel, recipient, category); `previous`: before it. */
  readonly cursor?: KeysetCursor<readonly [string, string, string]> | undefined;
  readonly limit: number;
}

/**
 * One page of the console's opt-out list in primary-key order (channel, recipient, category),
 * keyset-paged both ways like `notificationPage`: a row-value range of the primary key read
 * forward or backward, and one probe for rows behind the cursor.
 */
export async function optOutPage(db: SqlExecutor, params: OptOutPageParams): Promise<KeysetPage<SuppressionRow>> {
  const toward = params.cursor?.toward ?? 'next';
  const [beyond, order, behind] = toward === 'next' ? ['>', 'ASC', '<='] : ['<', 'DESC', '>='];
  const values = [
    params.tenantId,
    params.recipientPrefix !== undefined ? likePrefix(params.recipientPrefix) : null,
    ...(params.cursor?.key ?? [null, null, null]),
  ];
  const where = (op: string) =>
    `tenant_id = $1 AND ($2::text IS NULL OR lower(recipient) LIKE lower($2))
        AND ($3::text IS NULL OR (channel, recipient, category) ${op} ($3, $4, $5))`;
  const { rows } = await db.query<SuppressionRow>(
    `SELECT channel, recipient, category, reason, created_at FROM suppressions
      WHERE ${where(beyond)}
      ORDER BY channel ${order}, recipient ${order}, category ${order}
      LIMIT $6`,
    [...values, params.limit + 1],
  );
  const back =
    params.cursor !== undefined && (await db.query(`SELECT 1 FROM suppressions WHERE ${where(behind)} LIMIT 1`, values)).rows.length > 0;
  return keysetPage(rows, params.limit, toward, back);
}
