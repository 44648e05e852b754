import { type Context, Hono } from 'hono';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { type RateLimit, parseRateLimit } from '@notify/providers';
import type { Clock, Logger } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import { ENDPOINT_ID, EndpointListQuery, EndpointPatch, type EndpointView } from '../endpoint-schemas.js';
import { jsonBody } from '../middleware/json-body.js';
import { ProblemError } from '../problem.js';
import { endpointActionList } from '../sql/endpoint-action-list.js';
import { applyEndpointChange } from '../endpoint-actions.js';
import { type EndpointRecord, endpointGet } from '../sql/endpoint-get.js';
import { endpointList } from '../sql/endpoint-list.js';
import type { EndpointOperatorChange } from '../sql/endpoint-operator-update.js';
import { parseBody, parseQuery } from '../validate.js';
import { cursorId, encodeCursor, pageOf } from '../views.js';

/** What the endpoint routes need. */
export interface EndpointRoutesDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** NOTIFY_ENDPOINT_RATE_LIMIT, shown as the limit in force of endpoints without their own. */
  readonly defaultRateLimit: RateLimit | undefined;
}

const iso = (d: Date | null): string | null => (d === null ? null : new Date(d).toISOString());

/** An endpoint row as the API shows it, with the rate limit in force. */
function endpointView(r: EndpointRecord, defaultRateLimit: RateLimit | undefined): EndpointView {
  let own: RateLimit | undefined;
  try {
    own = r.rate_limit === null ? undefined : parseRateLimit(r.rate_limit);
  } catch {
    own = undefined; // a hand-written bad override: the dispatcher falls back to the default too
  }
  const limit = own ?? defaultRateLimit;
  return {
    id: r.id,
    channel: r.channel,
    origin: r.origin,
    provider: r.provider,
    state: r.state,
    consecutive_failures: r.consecutive_failures,
    failing_since: iso(r.failing_since),
    last_error_code: r.last_error_code,
    last_failure_at: iso(r.last_failure_at),
    last_success_at: iso(r.last_success_at),
    opened_at: iso(r.opened_at),
    probe_at: iso(r.probe_at),
    disabled_at: iso(r.disabled_at),
    disabled_by: r.disabled_by,
    rate_limit: r.rate_limit,
    effective_rate_limit: limit ? { per_second: limit.perSecond, burst: limit.burst, source: own ? 'endpoint' : 'default' } : null,
    created_at: new Date(r.created_at).toISOString(),
    updated_at: new Date(r.updated_at).toISOString(),
  };
}

const notFound = (id: string) => new ProblemError('not_found', `no endpoint ${id}`);

/**
 * `/v1/endpoints`: the health of what the tenant's deliveries go to (docs/endpoints.md): list
 * (filter by state and channel, cursor paging), look up, enable, disable, set or clear the rate
 * limit, and the history of those actions. Behind bearer auth and scoped to the key's tenant:
 * another tenant's endpoint is a 404, exactly like one that does not exist.
 */
export function endpointRoutes(deps: EndpointRoutesDeps): Hono<AppEnv> {
  const db = fromKysely(deps.db);
  const view = (r: EndpointRecord) => endpointView(r, deps.defaultRateLimit);
  const app = new Hono<AppEnv>();

  app.get('/', async (c) => {
    const q = parseQuery(EndpointListQuery, c.req.query());
    const afterId = cursorId(q.cursor, (id) => ENDPOINT_ID.test(id));
    const rows = await endpointList(db, {
      tenantId: c.get('auth').tenantId,
      state: q.state,
      channel: q.channel,
      afterId,
      limit: q.limit + 1,
    });
    return c.json(pageOf(rows, q.limit, view, (r) => encodeCursor(r.id)));
  });

  app.get('/:id', async (c) => {
    const id = c.req.param('id');
    const row = ENDPOINT_ID.test(id) ? await endpointGet(db, { tenantId: c.get('auth').tenantId, id }) : undefined;
    if (!row) throw notFound(id);
    return c.json(view(row));
  });

  app.get('/:id/actions', async (c) => {
    const id = c.req.param('id');
    const row = ENDPOINT_ID.test(id) ? await endpointGet(db, { tenantId: c.get('auth').tenantId, id }) : undefined;
    if (!row) throw notFound(id);
    const actions = await endpointActionList(db, { endpointId: id });
    return c.json({ data: actions.map((a) => ({ ...a, occurred_at: new Date(a.occurred_at).toISOString() })) });
  });

  const act = async (c: Context<AppEnv>, change: EndpointOperatorChange) => {
    const id = c.req.param('id') ?? '';
    const { tenantId, apiKeyId } = c.get('auth');
    const result = await applyEndpointChange(deps.db, { tenantId, id, apiKeyId, change, now: deps.clock.now() });
    if (!result) throw notFound(id);
    if (result.changed)
      deps.logger.info({ tenantId, endpointId: id, action: change.action, state: result.endpoint.state }, 'endpoint changed by operator');
    return c.json(view(result.endpoint));
  };
  app.post('/:id/enable', (c) => act(c, { action: 'enable' }));
  app.post('/:id/disable', (c) => act(c, { action: 'disable' }));
  app.patch('/:id', jsonBody(), async (c) => {
    const input = parseBody(EndpointPatch, c.get('json'), 'endpoint change');
    return act(c, { action: 'set_rate_limit', rateLimit: input.rate_limit === null ? null : input.rate_limit.trim() });
  });

  return app;
}
