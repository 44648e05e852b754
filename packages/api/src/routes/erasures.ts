import { Hono } from 'hono';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import type { Clock, Logger } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import { eraseRecipient } from '../erasure.js';
import { ErasureRequest } from '../erasure-schemas.js';
import { jsonBody } from '../middleware/json-body.js';
import { parseBody } from '../validate.js';

/** What the erasure route needs. */
export interface ErasureRoutesDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** `POST /v1/erasures`: erase a recipient's address and content from the key's tenant (docs/retention.md). */
export function erasureRoutes(deps: ErasureRoutesDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.post('/', jsonBody(), async (c) => {
    const input = parseBody(ErasureRequest, c.get('json'), 'erasure request');
    const auth = c.get('auth');
    const result = await eraseRecipient({
      db: deps.db,
      tenantId: auth.tenantId,
      to: input.to,
      deleteSuppressions: input.delete_suppressions ?? false,
      apiKeyId: auth.apiKeyId,
      now: deps.clock.now(),
    });
    // Ids and counts only: the address is what is being erased.
    deps.logger.info(
      { tenantId: auth.tenantId, erasureId: result.id, erased: result.erased, cancelled: result.cancelled },
      'recipient erased',
    );
    return c.json(result, 200);
  });
  return app;
}
