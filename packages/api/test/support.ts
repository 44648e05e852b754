import { generateApiKey, hashApiKey } from '@notify/api';
import { fromKysely } from '@notify/outbox';
import type { TestDatabase } from '../../../test/support/db.js';
import { apiKeyInsert } from '../src/sql/api-key-insert.js';

/** Creates one API key per tenant (named after it) and returns the keys by tenant. */
export async function seedTenantKeys<T extends string>(t: TestDatabase, tenants: readonly T[], now: Date): Promise<Record<T, string>> {
  const keys = {} as Record<T, string>;
  for (const tenant of tenants) {
    const k = generateApiKey();
    await apiKeyInsert(fromKysely(t.db), { id: k.id, tenantId: tenant, keyHash: hashApiKey(k.key), name: tenant, now });
    keys[tenant] = k.key;
  }
  return keys;
}

/** Blocks this process's event loop for `ms` (a busy loop: the CPU is taken, nothing else runs). */
export function busy(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // spin
  }
}
