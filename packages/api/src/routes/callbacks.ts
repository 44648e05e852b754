import { Hono } from 'hono';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { createTargetGuard } from '@notify/providers';
import type { Clock, Logger } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import { CallbackRequest, type CallbackView } from '../callback-schemas.js';
import { jsonBody } from '../middleware/json-body.js';
import { ProblemError } from '../problem.js';
import { type CallbackEndpointRecord, callbackEndpointGet } from '../sql/callback-endpoint-get.js';
import { callbackEndpointDelete } from '../sql/callback-endpoint-delete.js';
import { callbackEndpointPut } from '../sql/callback-endpoint-put.js';
import { parseBody } from '../validate.js';

/** What the callback routes need. */
export interface CallbackRoutesDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** NOTIFY_WEBHOOK_ALLOW_CIDRS: the SSRF policy's exceptions, the same as at send time. */
  readonly allowCidrs: readonly string[];
}

function view(r: CallbackEndpointRecord): CallbackView {
  return {
    url: r.url,
    events: r.events as CallbackView['events'],
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    pending: r.pending,
    failed: r.failed,
    dropped: Number(r.dropped),
    last_dropped_at: r.last_dropped_at?.toISOString() ?? null,
  };
}

/**
 * `/v1/callbacks`: the tenant's one status callback URL (docs/callbacks.md). PUT registers or
 * replaces it after the SSRF policy accepted the URL and every address its host resolves to now
 * (the sender checks again at every send: DNS may change); GET shows it with its backlog; DELETE
 * removes it with its pending deliveries. Scoped to the key's tenant.
 */
export function callbackRoutes(deps: CallbackRoutesDeps): Hono<AppEnv> {
  const db = fromKysely(deps.db);
  const guard = createTargetGuard({ allowCidrs: deps.allowCidrs });
  const app = new Hono<AppEnv>();
  app.put('/', jsonBody(), async (c) => {
    const input = parseBody(CallbackRequest, c.get('json'), 'callback registration');
    try {
      const url = guard.checkUrl(input.url);
      await guard.resolve(url.hostname);
    } catch (err) {
      throw new ProblemError('callback_url_refused', (err as Error).message, { cause: err });
    }
    const tenantId = c.get('auth').tenantId;
    const created = await callbackEndpointPut(db, { tenantId, url: input.url, events: input.events, now: deps.clock.now() });
    deps.logger.info({ tenantId, events: input.events, created }, 'callback endpoint registered');
    return c.json(view((await callbackEndpointGet(db, { tenantId }))!), created ? 201 : 200);
  });
  app.get('/', async (c) => {
    const row = await callbackEndpointGet(db, { tenantId: c.get('auth').tenantId });
    if (!row) throw new ProblemError('not_found', 'no callback is registered');
    return c.json(view(row));
  });
  app.delete('/', async (c) => {
    const tenantId = c.get('auth').tenantId;
    if (!(await callbackEndpointDelete(db, { tenantId }))) throw new ProblemError('not_found', 'no callback is registered');
    deps.logger.info({ tenantId }, 'callback endpoint removed');
    return c.body(null, 204);
  });
  return app;
}
