import { type Context, Hono } from 'hono';
import type { Kysely } from 'kysely';
import { type Clock, type Logger } from '@notify/runtime';
import { type Database } from '@notify/migrations';
import { type NotificationIntent, enqueueMany, fromKysely, isNotificationId } from '@notify/outbox';
import type { AppEnv } from '../env.js';
import { createEnqueueGroups } from '../enqueue-group.js';
import { MAX_BATCH_BODY_BYTES, jsonBody } from '../middleware/json-body.js';
import { BulkRetryRequest } from '../management-schemas.js';
import { bulkRetry, cancelNotification, retryNotification } from '../notification-actions.js';
import { bulkRetryGet, bulkRetryProgress } from '../sql/bulk-retry-store.js';
import { parseBody, parseQuery } from '../validate.js';
import { withServerSpan } from '../tracing.js';
import { type ProblemDetails, ProblemError, problemFromError } from '../problem.js';
import { ListQuery, MAX_BATCH_ITEMS } from '../schemas.js';
import { attemptList } from '../sql/attempt-list.js';
import { intentCheck } from '../sql/intent-check.js';
import { notificationActionList } from '../sql/notification-action-list.js';
import { notificationGet } from '../sql/notification-get.js';
import { notificationList } from '../sql/notification-list.js';
import { actionView, attemptView, cursorId, encodeCursor, notificationView, pageOf } from '../views.js';

/** What the notification routes need. */
export interface NotificationRoutesDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly retry: { readonly maxAttempts: number; readonly defaultTtlMs: number };
  /** Group commit of single enqueues (`createEnqueueGroups`): intents per statement at most (1: off) and groups in flight at most. */
  readonly enqueueGroup: { readonly maxGroupSize: number; readonly maxInFlight: number };
  /** Hears about every group of single enqueues written (metrics). */
  readonly onEnqueueGroup?: (size: number, isolated: boolean) => void;
}

const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,255}$/;

/** Intent fields the API sets itself (from the API key, the Idempotency-Key header, the trace context), never from the body. */
const RESERVED_FIELDS = ['tenant_id', 'idempotency_key', 'traceparent'] as const;
/** The same for a batch item, which carries its own `idempotency_key`. */
const RESERVED_ITEM_FIELDS = ['tenant_id', 'traceparent'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The issue and the problem detail of an Idempotency-Key header the API refuses. */
const KEY_ISSUE = { path: 'Idempotency-Key', message: 'must be one header of 1 to 255 printable ASCII characters' };
const KEY_DETAIL = 'the Idempotency-Key header must be given once, 1 to 255 printable ASCII characters';

/**
 * The request's Idempotency-Key and whether it is refused: not 1 to 255 printable ASCII
 * characters, or given on more than one header line. Node joins repeated lines into one value with
 * ", ", which a key may hold itself, so only the raw lines (@hono/node-server's `incoming`) tell two
 * keys from one; without them (app.request in tests) one value counts as one line.
 */
function idempotencyKeyOf(c: Context<AppEnv>): { readonly key: string | undefined; readonly refused: boolean } {
  const key = c.req.header('idempotency-key');
  if (key === undefined) return { key, refused: false };
  if (!IDEMPOTENCY_KEY.test(key)) return { key, refused: true };
  const raw = (c.env as { incoming?: { rawHeaders?: readonly string[] } } | undefined)?.incoming?.rawHeaders ?? [];
  let lines = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.toLowerCase() === 'idempotency-key') lines++;
  return { key, refused: lines > 1 };
}

function notFound(id: string): ProblemError {
  return new ProblemError('not_found', `no notification ${id}`);
}

/**
 * `/v1/notifications`: enqueue, look up, list, attempts, actions, cancel, retry. Every route is
 * behind bearer auth (createApp's, in front of every /v1 route) and scoped to the caller's tenant: another tenant's id is a 404, exactly like
 * an id that does not exist. No handler waits for Kafka or a provider: they read and write PostgreSQL only.
 */
export function notificationRoutes(deps: NotificationRoutesDeps): Hono<AppEnv> {
  const db = fromKysely(deps.db);
  const groups = createEnqueueGroups(deps.db, deps.clock, { ...deps.enqueueGroup, retry: deps.retry, onGroup: deps.onEnqueueGroup });
  const app = new Hono<AppEnv>();

  app.post('/', jsonBody(), async (c) => {
    const auth = c.get('auth');
    const body = c.get('json');
    // Validated once, by enqueue (PostgreSQL's notify_enqueue_row): the same rules as every other
    // enqueuer. Here only what the API itself adds: a JSON object, without the fields the API
    // sets from the key, the Idempotency-Key header and the trace context.
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new ProblemError('validation_failed', 'the request body must be a JSON object', {
        extensions: { errors: [{ path: '(root)', message: 'expected an object' }] },
      });
    }
    const reserved = RESERVED_FIELDS.filter((f) => Object.hasOwn(body, f));
    const { key, refused: badKey } = idempotencyKeyOf(c);
    if (reserved.length > 0 || badKey) {
      // Refused, but with every other problem of the body too, as one answer (rare path).
      const rest = Object.fromEntries(Object.entries(body).filter(([k]) => !(RESERVED_FIELDS as readonly string[]).includes(k)));
      const other = await intentCheck(db, { intent: { ...rest, tenant_id: c.get('auth').tenantId }, now: deps.clock.now() });
      const errors = [
        ...(badKey ? [KEY_ISSUE] : []),
        ...reserved.map((f) => ({ path: f, message: `unrecognized key: the API sets ${f} itself` })),
        ...(other?.errors ?? []),
      ];
      const detail = errors.length === 1 && badKey ? KEY_DETAIL : 'the request body is not a valid notification';
      throw new ProblemError('validation_failed', detail, { extensions: { errors } });
    }
    return withServerSpan('POST /v1/notifications', c.req.header('traceparent'), async (trace) => {
      c.set('trace', trace);
      const intent = {
        ...(body as Omit<NotificationIntent, 'tenant_id'>),
        tenant_id: auth.tenantId,
        idempotency_key: key,
        traceparent: trace.traceparent,
      };
      // Written together with the intents of concurrent requests (group commit), answered after
      // the group's commit with this intent's own result.
      const { notification, created } = await groups.enqueue(intent);
      // debug, not info: the request-context middleware already writes one info line per request
      // (with its trace id); a second one per enqueue doubled the logging on the API's hottest route.
      deps.logger.debug(
        { notificationId: notification.id, tenantId: auth.tenantId, channel: notification.channel, created, traceId: trace.traceId },
        created ? 'notification queued' : 'notification replayed for a repeated Idempotency-Key',
      );
      c.header('location', `/v1/notifications/${notification.id}`);
      return c.json(notificationView(notification), created ? 202 : 200);
    });
  });

  app.post('/batch', jsonBody(MAX_BATCH_BODY_BYTES), async (c) => {
    const auth = c.get('auth');
    const body = c.get('json');
    // The envelope is checked here; every item is validated by enqueueMany (PostgreSQL), one by one.
    const envelopeIssues: { path: string; message: string }[] = [];
    if (!isObject(body)) envelopeIssues.push({ path: '(root)', message: 'expected an object { items, atomic? }' });
    else {
      const items = body.items;
      if (!Array.isArray(items) || items.length < 1 || items.length > MAX_BATCH_ITEMS) {
        envelopeIssues.push({ path: 'items', message: `must be an array of 1 to ${MAX_BATCH_ITEMS} notification requests` });
      }
      if (body.atomic !== undefined && typeof body.atomic !== 'boolean')
        envelopeIssues.push({ path: 'atomic', message: 'must be a boolean' });
      for (const k of Object.keys(body)) if (k !== 'items' && k !== 'atomic') envelopeIssues.push({ path: k, message: 'unrecognized key' });
    }
    if (c.req.header('idempotency-key') !== undefined) {
      envelopeIssues.push({ path: 'Idempotency-Key', message: 'a batch takes one key per item: items[i].idempotency_key' });
    }
    if (envelopeIssues.length > 0) {
      throw new ProblemError('validation_failed', 'the request body is not a valid batch', { extensions: { errors: envelopeIssues } });
    }
    const { items, atomic } = body as { items: unknown[]; atomic?: boolean };
    return withServerSpan('POST /v1/notifications/batch', c.req.header('traceparent'), async (trace) => {
      c.set('trace', trace);
      // Items the API refuses itself (not an object, a reserved field) are left out of the call.
      const own: (ProblemError | undefined)[] = items.map((item, i) => {
        if (!isObject(item)) {
          return new ProblemError('validation_failed', `item ${i} is not a JSON object`, {
            extensions: { errors: [{ path: '(root)', message: 'expected an object' }] },
          });
        }
        const issues: { path: string; message: string }[] = RESERVED_ITEM_FIELDS.filter((f) => Object.hasOwn(item, f)).map((f) => ({
          path: f,
          message: `unrecognized key: the API sets ${f} itself`,
        }));
        // The header's rule: a key a single request could not send again would be a key of the batch only.
        const key = item.idempotency_key;
        if (typeof key === 'string' && !IDEMPOTENCY_KEY.test(key)) {
          issues.push({ path: 'idempotency_key', message: 'must be 1 to 255 printable ASCII characters, as the Idempotency-Key header' });
        }
        if (issues.length === 0) return undefined;
        return new ProblemError('validation_failed', `item ${i} is not a valid notification request`, { extensions: { errors: issues } });
      });
      if (atomic && own.some((p) => p)) {
        throw new ProblemError('batch_refused', 'the atomic batch was refused, nothing was queued', {
          extensions: { items: own.flatMap((p, index) => (p ? [{ index, problem: problemFromError(p).body }] : [])) },
        });
      }
      const positions = own.flatMap((p, i) => (p ? [] : [i]));
      const intents = positions.map((i) => ({
        ...(items[i] as Omit<NotificationIntent, 'tenant_id'>),
        tenant_id: auth.tenantId,
        traceparent: trace.traceparent,
      }));
      const results =
        intents.length === 0
          ? []
          : await deps.db.transaction().execute((trx) =>
              enqueueMany(trx, intents, {
                now: deps.clock.now(),
                maxAttempts: deps.retry.maxAttempts,
                defaultTtlMs: deps.retry.defaultTtlMs,
                atomic: atomic ?? false,
              }),
            );
      const answer: ({ status: number; id: string } | { status: number; problem: ProblemDetails })[] = own.map((p) =>
        p ? { status: 422, problem: problemFromError(p).body } : { status: 202, id: '' },
      );
      results.forEach((r, k) => {
        const i = positions[k]!;
        if (r.ok) answer[i] = { status: r.created ? 202 : 200, id: r.notification.id };
        else {
          const { body: problem } = problemFromError(r.error);
          answer[i] = { status: problem.status, problem };
        }
      });
      const queued = results.filter((r) => r.ok && r.created).length;
      deps.logger.info({ tenantId: auth.tenantId, items: items.length, queued, traceId: trace.traceId }, 'notification batch handled');
      return c.json({ items: answer }, 200);
    });
  });

  app.get('/', async (c) => {
    const q = parseQuery(ListQuery, c.req.query());
    const beforeId = cursorId(q.cursor, isNotificationId);
    const rows = await notificationList(db, {
      tenantId: c.get('auth').tenantId,
      filter: {
        state: q.state,
        recipient: q.to,
        deadReason: q.dead_reason,
        lastErrorPrefix: q.last_error_prefix,
        hasLastError: q.has_last_error === undefined ? undefined : q.has_last_error === 'true',
      },
      beforeId,
      limit: q.limit + 1,
    });
    return c.json(pageOf(rows, q.limit, notificationView, (r) => encodeCursor(r.id)));
  });

  app.post('/retry', jsonBody(), async (c) => {
    const auth = c.get('auth');
    const input = parseBody(BulkRetryRequest, c.get('json'), 'bulk retry');
    const { key, refused } = idempotencyKeyOf(c);
    if (refused) throw new ProblemError('validation_failed', KEY_DETAIL, { extensions: { errors: [KEY_ISSUE] } });
    const f = input.filter;
    const result = await bulkRetry({
      db: deps.db,
      tenantId: auth.tenantId,
      filter: {
        deadReason: f.dead_reason,
        channel: f.channel,
        recipient: f.to,
        lastErrorPrefix: f.last_error_prefix,
        createdFrom: f.created_from !== undefined ? new Date(f.created_from) : undefined,
        createdTo: f.created_to !== undefined ? new Date(f.created_to) : undefined,
      },
      filterJson: { ...f, limit: input.limit },
      limit: input.limit,
      idempotencyKey: key ?? null,
      apiKeyId: auth.apiKeyId,
      now: deps.clock.now(),
      budget: deps.retry.maxAttempts,
    });
    if (!result.replayed) {
      deps.logger.info(
        { tenantId: auth.tenantId, apiKeyId: auth.apiKeyId, bulkRetryId: result.id, requeued: result.requeued },
        'dead notifications re-queued in bulk',
      );
    }
    c.header('location', `/v1/notifications/retries/${result.id}`);
    return c.json(
      { id: result.id, requeued: result.requeued, matched: result.matched, created_at: result.createdAt.toISOString() },
      result.replayed ? 200 : 202,
    );
  });

  app.get('/retries/:id', async (c) => {
    const id = c.req.param('id');
    const row = await bulkRetryGet(db, { tenantId: c.get('auth').tenantId, id });
    if (!row) throw new ProblemError('not_found', `no bulk retry ${id}`);
    const states = await bulkRetryProgress(db, { id: row.id });
    return c.json({ id: row.id, requeued: row.requeued, matched: row.matched, created_at: new Date(row.created_at).toISOString(), states });
  });

  app.get('/:id', async (c) => {
    const id = c.req.param('id');
    const n = isNotificationId(id) ? await notificationGet(db, { tenantId: c.get('auth').tenantId, id }) : undefined;
    if (!n) throw notFound(id);
    return c.json(notificationView(n));
  });

  app.get('/:id/attempts', async (c) => {
    const id = c.req.param('id');
    const n = isNotificationId(id) ? await notificationGet(db, { tenantId: c.get('auth').tenantId, id }) : undefined;
    if (!n) throw notFound(id);
    const attempts = await attemptList(db, { notificationId: n.id });
    return c.json({ data: attempts.map(attemptView) });
  });

  app.get('/:id/actions', async (c) => {
    const id = c.req.param('id');
    const n = isNotificationId(id) ? await notificationGet(db, { tenantId: c.get('auth').tenantId, id }) : undefined;
    if (!n) throw notFound(id);
    const actions = await notificationActionList(db, { notificationId: n.id });
    return c.json({ data: actions.map(actionView) });
  });

  app.post('/:id/cancel', async (c) => {
    const id = c.req.param('id');
    const auth = c.get('auth');
    const result = isNotificationId(id)
      ? await cancelNotification({ db: deps.db, tenantId: auth.tenantId, id, now: deps.clock.now(), apiKeyId: auth.apiKeyId })
      : undefined;
    if (!result) throw notFound(id);
    if (result.changed)
      deps.logger.info({ notificationId: id, tenantId: auth.tenantId, apiKeyId: auth.apiKeyId }, 'notification cancelled');
    return c.json(notificationView(result.notification), 200);
  });

  app.post('/:id/retry', async (c) => {
    const id = c.req.param('id');
    const auth = c.get('auth');
    const result = isNotificationId(id)
      ? await retryNotification({
          db: deps.db,
          tenantId: auth.tenantId,
          id,
          now: deps.clock.now(),
          apiKeyId: auth.apiKeyId,
          budget: deps.retry.maxAttempts,
        })
      : undefined;
    if (!result) throw notFound(id);
    deps.logger.info(
      { notificationId: id, tenantId: auth.tenantId, apiKeyId: auth.apiKeyId, maxAttempts: result.notification.max_attempts },
      'notification re-queued by a manual retry',
    );
    c.header('location', `/v1/notifications/${id}`);
    return c.json(notificationView(result.notification), 202);
  });

  return app;
}
