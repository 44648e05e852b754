import { type Logger } from '@notify/runtime';
import { type SqlExecutor } from '@notify/outbox';
import { apiKeyFindByHash, apiKeyInsert, hashApiKey, seededKeyId, tenantEnsure } from '@notify/api';

/**
 * Stores the NOTIFY_API_KEYS keys (hashed) for their tenants, each under a random id. Idempotent:
 * a key stored before (by its hash) is left alone, its id and revocation included. A key already stored for another tenant is not moved; it is
 * reported. Returns how many keys were new.
 */
export async function seedApiKeys(
  db: SqlExecutor,
  keys: readonly { readonly tenantId: string; readonly key: string }[],
  now: Date,
  logger: Logger,
): Promise<number> {
  let created = 0;
  for (const { tenantId, key } of keys) {
    const keyHash = hashApiKey(key);
    await tenantEnsure(db, { tenantId, now });
    if (await apiKeyInsert(db, { id: seededKeyId(), tenantId, keyHash, name: 'NOTIFY_API_KEYS', now })) {
      created++;
      continue;
    }
    const existing = await apiKeyFindByHash(db, { keyHash });
    if (existing && existing.tenant_id !== tenantId) {
      logger.warn({ apiKeyId: existing.id, tenantId }, 'NOTIFY_API_KEYS: this key is already stored for another tenant; left unchanged');
    }
  }
  return created;
}
