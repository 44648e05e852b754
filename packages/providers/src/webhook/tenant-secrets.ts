import { type Clock, openSecret } from '@notify/runtime';
import { type TransactionLike, toExecutor } from '@notify/outbox';
import { type StoredSigningSecret, tenantSigningSecretsGet } from './sql/tenant-signing-secrets-get.js';

/** Options of `createTenantSecretSource`. */
export interface TenantSecretSourceOptions {
  readonly db: TransactionLike;
  readonly clock: Clock;
  /** NOTIFY_SECRETS_KEY (32 bytes): opens the sealed secrets. Without it a tenant with sealed secrets cannot be signed for. */
  readonly secretsKey?: Buffer | undefined;
  /** How long a tenant's secrets (or their absence) are cached, ms. Default 30 s: a rotated secret is used within 30 s. */
  readonly ttlMs?: number;
}

/**
 * Per-tenant webhook signing secrets (every one that still signs: after a rotation, the new one
 * and, until its grace period ends, the old one), opened with NOTIFY_SECRETS_KEY and cached
 * briefly so a webhook send costs no query in the common case. Concurrent misses of one tenant
 * share one query: the sends a process starts at once (its first fetch of a backlog, or every
 * send after an entry expired) each asked on its own, and each took a connection of the pool for
 * it (a cold drain of 10,000 opened all 20, 12 of them for this lookup; session 34). Returns null
 * when the tenant has none. A database error, or sealed secrets without the key, throws (the
 * webhook provider turns it into a transient failure rather than sending unsigned); a failed
 * query is not remembered, so the next send asks again.
 */
export function createTenantSecretSource(options: TenantSecretSourceOptions): (tenantId: string) => Promise<readonly string[] | null> {
  const db = toExecutor(options.db);
  const ttlMs = options.ttlMs ?? 30_000;
  const cache = new Map<string, { readonly secrets: Promise<readonly StoredSigningSecret[]>; readonly until: number }>();

  function open(tenantId: string, stored: StoredSigningSecret): string {
    if (stored.plain !== null) return stored.plain;
    if (!options.secretsKey) {
      throw new Error('the tenant has sealed signing secrets but NOTIFY_SECRETS_KEY is not set on this process');
    }
    return openSecret(options.secretsKey, stored.sealed!, tenantId);
  }

  return async (tenantId) => {
    const now = options.clock.now();
    let hit = cache.get(tenantId);
    if (!hit || hit.until <= now.getTime()) {
      const entry = { secrets: tenantSigningSecretsGet(db, { tenantId, now }), until: now.getTime() + ttlMs };
      entry.secrets.catch(() => {
        if (cache.get(tenantId) === entry) cache.delete(tenantId);
      });
      cache.set(tenantId, entry);
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      hit = entry;
    }
    const secrets = await hit.secrets;
    // A cached secret whose grace period ended meanwhile stops signing now, not at the next refresh.
    const live = secrets.filter((s) => s.expiresAt === null || s.expiresAt.getTime() > now.getTime());
    return live.length > 0 ? live.map((s) => open(tenantId, s)) : null;
  };
}
