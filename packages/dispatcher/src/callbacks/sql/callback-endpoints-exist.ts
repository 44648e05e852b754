import type { SqlExecutor } from '@notify/outbox';

/** Parameters of `callbackEndpointsExist` (none). */
export type CallbackEndpointsExistParams = Record<string, never>;

/**
 * Whether any tenant has a callback endpoint: while none has, the callback intake reads no events
 * (one primary-key index probe, asked once a second).
 */
export async function callbackEndpointsExist(db: SqlExecutor, _params: CallbackEndpointsExistParams = {}): Promise<boolean> {
  const { rows } = await db.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM callback_endpoints) AS any', []);
  return rows[0]?.any === true;
}
