import type { SqlExecutor } from '@notify/outbox';
import type { Clock } from '@notify/runtime';
import { type ApiKeyRecord, apiKeyFindByHash } from './sql/api-key-find-by-hash.js';

/** Looks up the API key stored under a sha256 hash (revoked or not), or undefined. */
export type ApiKeyLookup = (keyHash: string) => Promise<ApiKeyRecord | undefined>;

/** Keys remembered at most; beyond it the oldest entry goes first. */
const MAX_ENTRIES = 10_000;

/**
 * The API-key lookup of the auth middleware, with a cache (NOTIFY_API_KEY_CACHE_MS). A key found
 * in `api_keys` (valid or revoked) is remembered for `ttlMs` from the moment it was read, so a
 * key revoked with `notify api-keys revoke` is refused by every API process at most `ttlMs` after
 * the revocation committed (docs/api.md, "API keys"). An unknown key is never remembered: a key
 * just created works at once, and guessing keys fills no memory. Concurrent lookups of one key
 * share one query. `ttlMs` 0: every request reads the table (revocation takes effect on the
 * next request).
 */
export function apiKeyLookup(deps: { readonly db: SqlExecutor; readonly clock: Clock; readonly ttlMs: number }): ApiKeyLookup {
  const read: ApiKeyLookup = (keyHash) => apiKeyFindByHash(deps.db, { keyHash });
  if (deps.ttlMs <= 0) return read;
  const entries = new Map<string, { readonly at: number; readonly key: Promise<ApiKeyRecord | undefined> }>();
  return (keyHash) => {
    const now = deps.clock.now().getTime();
    const hit = entries.get(keyHash);
    // `at` is when the read started, so the bound holds from the revocation's commit on.
    if (hit && now - hit.at < deps.ttlMs) return hit.key;
    if (hit) entries.delete(keyHash);
    const key = read(keyHash).then(
      (found) => {
        if (!found && entries.get(keyHash)?.key === key) entries.delete(keyHash);
        return found;
      },
      (err: unknown) => {
        if (entries.get(keyHash)?.key === key) entries.delete(keyHash);
        throw err;
      },
    );
    if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
    entries.set(keyHash, { at: now, key });
    return key;
  };
}
