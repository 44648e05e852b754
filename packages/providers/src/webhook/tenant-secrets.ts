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
 * briefly so a webhook send costs no query in the common case. Returns null when the tenant has
 * none. A database error, or sealed secrets without the key, throws (the webhook provider turns
 * it into a transient failure rather than sending unsigned).
 */
export function createTenantSecretSource(options: TenantSecretSourceOptions): (tenantId: string) => Promise<readonly string[] | null> {
  const db = toExecutor(options.db);
  const ttlMs = options.ttlMs ?? 30_000;
  const cache = new Map<string, { secrets: readonly StoredSigningSecret[]; until: number }>();

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
      hit = { secrets: await tenantSigningSecretsGet(db, { tenantId, now }), until: now.getTime() + ttlMs };
      cache.set(tenantId, hit);
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
    }
    // A cached secret whose grace period ended meanwhile stops signing now, not at the next refresh.
    const live = hit.secrets.filter((s) => s.expiresAt === null || s.expiresAt.getTime() > now.getTime());
    return live.length > 0 ? live.map((s) => open(tenantId, s)) : null;
  };
}
