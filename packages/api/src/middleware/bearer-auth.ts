import type { MiddlewareHandler } from 'hono';
import { type SqlExecutor } from '@notify/outbox';
import { hashApiKey, hashesEqual } from '../api-key.js';
import type { AppEnv } from '../env.js';
import { ProblemError } from '../problem.js';
import { apiKeyFindByHash } from '../sql/api-key-find-by-hash.js';

const BEARER = /^Bearer +([\x21-\x7e]{1,512})$/i;

/**
 * `Authorization: Bearer <key>`: the key is hashed (sha256) and looked up by its hash; the stored
 * hash is compared in constant time; revoked keys are refused. Sets `auth` (tenant and key id).
 * Every failure is a 401 problem with a `WWW-Authenticate` challenge. The lookup is the app's
 * `apiKeyLookup` when it set one (the cache of NOTIFY_API_KEY_CACHE_MS), else a query per request.
 * Then the rate-limit check
 * the app set (`rateLimit`, see `apiRateLimit`) runs for the authenticated caller.
 */
export function bearerAuth(deps: { readonly db: SqlExecutor }): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    const header = c.req.header('authorization');
    const match = header ? BEARER.exec(header) : null;
    if (!match) {
      throw new ProblemError('unauthorized', 'send your API key as "Authorization: Bearer <key>"', {
        headers: { 'www-authenticate': 'Bearer realm="notify"' },
      });
    }
    const hash = hashApiKey(match[1]!);
    const lookup = c.get('apiKeyLookup');
    const key = await (lookup ? lookup(hash) : apiKeyFindByHash(deps.db, { keyHash: hash }));
    if (!key || !hashesEqual(key.key_hash, hash)) {
      throw new ProblemError('unauthorized', 'the API key is not valid', {
        headers: { 'www-authenticate': 'Bearer realm="notify", error="invalid_token"' },
      });
    }
    if (key.revoked_at !== null) {
      throw new ProblemError('unauthorized', 'the API key has been revoked', {
        headers: { 'www-authenticate': 'Bearer realm="notify", error="invalid_token"' },
      });
    }
    const auth = { tenantId: key.tenant_id, apiKeyId: key.id };
    c.set('auth', auth);
    await c.get('rateLimit')?.(c, auth);
    await next();
  };
}
