import { type Clock } from '@notify/runtime';
import { type TransactionLike, toExecutor } from '@notify/outbox';
import { tenantSigningSecretGet } from './sql/tenant-signing-secret-get.js';

/** Options of `createTenantSecretSource`. */
export interface TenantSecretSourceOptions {
  readonly db: TransactionLike;
  readonly clock: Clock;
  /** How long a tenant's secret (or its absence) is cached, ms. Default 30 s: a rotated secret is used within 30 s. */
  readonly ttlMs?: number;
}

/**
 * Per-tenant webhook signing secrets from `tenants.webhook_signing_secret`, cached briefly so a
 * webhook send costs no query in the common case. A database error propagates (the webhook
 * provider turns it into a transient failure rather than sending unsigned).
 */
export function createTenantSecretSource(options: TenantSecretSourceOptions): (tenantId: string) => Promise<string | null> {
  const db = toExecutor(options.db);
  const ttlMs = options.ttlMs ?? 30_000;
  const cache = new Map<string, { secret: string | null; until: number }>();
  return async (tenantId) => {
    const now = options.clock.now().getTime();
    const hit = cache.get(tenantId);
    if (hit && hit.until > now) return hit.secret;
    const secret = await tenantSigningSecretGet(db, { tenantId });
    cache.set(tenantId, { secret, until: now + ttlMs });
    if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
    return secret;
  };
}
