import { Hono } from 'hono';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { type Clock, type Logger, normalizeRecipient } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import { MAX_BODY_BYTES, jsonBody } from '../middleware/json-body.js';
import { ProblemError } from '../problem.js';
import {
  SuppressionCreate,
  SuppressionDeleteQuery,
  SuppressionListQuery,
  TemplateActivate,
  TemplateCreate,
  TemplatePreviewRequest,
  WebhookSecretRotate,
} from '../management-schemas.js';
import { createTemplateVersion, previewTemplate, templateVersionView } from '../management/templates.js';
import {
  addSuppression,
  decodeSuppressionCursor,
  encodeSuppressionCursor,
  removeSuppression,
  suppressionView,
} from '../management/suppressions.js';
import { type SecretsSettings, rotateWebhookSecret } from '../management/webhook-secret.js';
import { templateActivate } from '../sql/template-activate.js';
import { templateDelete } from '../sql/template-delete.js';
import { templateList } from '../sql/template-list.js';
import { templateVersionList } from '../sql/template-version-list.js';
import { suppressionList } from '../sql/suppression-list.js';
import { webhookSecretExpire } from '../sql/webhook-secret-expire.js';
import { webhookSecretList } from '../sql/webhook-secret-list.js';
import { parseBody, parseQuery } from '../validate.js';
import { pageOf } from '../views.js';

/** What the management routes need. */
export interface ManagementRoutesDeps {
  readonly db: Kysely<Database>;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Only the webhook-secret routes use it. */
  readonly secrets: SecretsSettings;
}

function versionParam(raw: string): number {
  if (!/^[1-9]\d{0,9}$/.test(raw)) throw new ProblemError('not_found', `no template version ${raw}`);
  return Number(raw);
}

/**
 * `/v1/templates`: create a version, list, get, activate, delete, preview. Behind bearer auth and scoped to the key's tenant like `/v1/notifications`: another
 * tenant's data is a 404, exactly like data that does not exist.
 */
export function templateRoutes(deps: ManagementRoutesDeps): Hono<AppEnv> {
  const db = fromKysely(deps.db);
  const app = new Hono<AppEnv>();
  // Templates
  app.post('/', jsonBody(), async (c) => {
    const input = parseBody(TemplateCreate, c.get('json'), 'template');
    const tenantId = c.get('auth').tenantId;
    const created = await deps.db.transaction().execute((trx) => createTemplateVersion(fromKysely(trx), tenantId, input, deps.clock.now()));
    deps.logger.info({ tenantId, template: created.name, version: created.version }, 'template version created');
    c.header('location', `/v1/templates/${encodeURIComponent(created.name)}/versions/${created.version}`);
    return c.json(created, 201);
  });
  app.get('/', async (c) => {
    const rows = await templateList(db, { tenantId: c.get('auth').tenantId });
    return c.json({ data: rows.map((r) => ({ ...r, updated_at: new Date(r.updated_at).toISOString() })) });
  });
  app.get('/:name', async (c) => {
    const name = c.req.param('name');
    const rows = await templateVersionList(db, { tenantId: c.get('auth').tenantId, name });
    if (rows.length === 0) throw new ProblemError('not_found', `no template "${name}"`);
    return c.json({ data: rows.map(templateVersionView) });
  });
  app.get('/:name/versions/:version', async (c) => {
    const name = c.req.param('name');
    const version = versionParam(c.req.param('version'));
    const [row] = await templateVersionList(db, { tenantId: c.get('auth').tenantId, name, version });
    if (!row) throw new ProblemError('not_found', `no template "${name}" version ${version}`);
    return c.json(templateVersionView(row));
  });
  app.put('/:name/active', jsonBody(), async (c) => {
    const name = c.req.param('name');
    const { version } = parseBody(TemplateActivate, c.get('json'), 'activation');
    const tenantId = c.get('auth').tenantId;
    if (!(await templateActivate(db, { tenantId, name, version, now: deps.clock.now() }))) {
      throw new ProblemError('not_found', `no template "${name}" version ${version}`);
    }
    deps.logger.info({ tenantId, template: name, version }, 'template version activated');
    const [row] = await templateVersionList(db, { tenantId, name, version });
    return c.json(templateVersionView(row!));
  });
  app.delete('/:name/versions/:version', async (c) => {
    const name = c.req.param('name');
    const version = versionParam(c.req.param('version'));
    const tenantId = c.get('auth').tenantId;
    const result = await deps.db.transaction().execute((trx) => templateDelete(fromKysely(trx), { tenantId, name, version }));
    if (result.kind === 'not_found') throw new ProblemError('not_found', `no template "${name}" version ${version}`);
    if (result.kind === 'in_use') throw new ProblemError('in_use', result.reason);
    deps.logger.info({ tenantId, template: name, version }, 'template version deleted');
    return c.body(null, 204);
  });
  app.post('/:name/preview', jsonBody(), async (c) => {
    const input = parseBody(TemplatePreviewRequest, c.get('json'), 'preview request');
    return c.json(await previewTemplate(db, c.get('auth').tenantId, c.req.param('name'), input));
  });

  return app;
}

/**
 * `/v1/suppressions`: add, list (cursor), remove opt-outs; checked at send time. Behind bearer auth and scoped to the key's tenant like `/v1/notifications`: another
 * tenant's data is a 404, exactly like data that does not exist.
 */
export function suppressionRoutes(deps: ManagementRoutesDeps): Hono<AppEnv> {
  const db = fromKysely(deps.db);
  const app = new Hono<AppEnv>();
  // Opt-outs
  app.post('/', jsonBody(), async (c) => {
    const input = parseBody(SuppressionCreate, c.get('json'), 'opt-out');
    const tenantId = c.get('auth').tenantId;
    const result = await addSuppression(db, tenantId, { ...input, channel: input.channel }, deps.clock.now());
    if ('problem' in result) {
      throw new ProblemError('validation_failed', 'the request body is not a valid opt-out', {
        extensions: { errors: [{ path: 'to', message: result.problem }] },
      });
    }
    const view = result.added;
    deps.logger.info({ tenantId, channel: view.channel, category: view.category }, 'opt-out recorded');
    return c.json(view, 201);
  });
  app.get('/', async (c) => {
    const q = parseQuery(SuppressionListQuery, c.req.query());
    const channel = q.channel;
    const rows = await suppressionList(db, {
      tenantId: c.get('auth').tenantId,
      channel,
      recipient: q.to !== undefined ? normalizeRecipient(channel ?? 'webhook', q.to) : undefined,
      after: q.cursor !== undefined ? decodeSuppressionCursor(q.cursor) : undefined,
      limit: q.limit + 1,
    });
    return c.json(pageOf(rows, q.limit, suppressionView, encodeSuppressionCursor));
  });
  app.delete('/', async (c) => {
    const q = parseQuery(SuppressionDeleteQuery, c.req.query());
    const tenantId = c.get('auth').tenantId;
    await removeSuppression(db, tenantId, { ...q, channel: q.channel });
    deps.logger.info({ tenantId, channel: q.channel, category: q.category ?? '*' }, 'opt-out removed');
    return c.body(null, 204);
  });

  return app;
}

/**
 * `/v1/webhook-secret`: the tenant's signing secrets (metadata only) and their rotation. Behind bearer auth and scoped to the key's tenant like `/v1/notifications`: another
 * tenant's data is a 404, exactly like data that does not exist.
 */
export function webhookSecretRoutes(deps: ManagementRoutesDeps): Hono<AppEnv> {
  const db = fromKysely(deps.db);
  const app = new Hono<AppEnv>();
  // Webhook signing secret
  app.get('/', async (c) => {
    const rows = await webhookSecretList(db, { tenantId: c.get('auth').tenantId, now: deps.clock.now() });
    return c.json({
      data: rows.map((r) => ({
        id: r.id,
        created_at: new Date(r.created_at).toISOString(),
        expires_at: r.expires_at ? new Date(r.expires_at).toISOString() : null,
      })),
    });
  });
  app.post('/rotate', jsonBody(MAX_BODY_BYTES, { optional: true }), async (c) => {
    const raw = c.get('json');
    const input = raw === undefined ? {} : parseBody(WebhookSecretRotate, raw, 'rotation');
    const tenantId = c.get('auth').tenantId;
    const graceMs = input.previous_expires_in_seconds === undefined ? undefined : input.previous_expires_in_seconds * 1000;
    const rotated = await rotateWebhookSecret(deps.db, deps.secrets, tenantId, deps.clock.now(), graceMs);
    // The id only: the secret itself never reaches a log.
    deps.logger.info({ tenantId, secretId: rotated.id, previousExpiresAt: rotated.previous_expires_at }, 'webhook signing secret rotated');
    c.header('cache-control', 'no-store');
    return c.json(rotated, 201);
  });
  // Ends one previous secret's grace now (a leaked secret); the current one is retired by rotating.
  app.delete('/:id', async (c) => {
    const id = c.req.param('id');
    const tenantId = c.get('auth').tenantId;
    // Ids are digits (a bigint): anything else names no secret.
    const outcome = /^[1-9]\d{0,17}$/.test(id) ? await webhookSecretExpire(db, { tenantId, id, now: deps.clock.now() }) : 'missing';
    if (outcome === 'missing') throw new ProblemError('not_found', `no webhook signing secret ${id} that still signs`);
    if (outcome === 'current') {
      throw new ProblemError(
        'webhook_secret_current',
        `secret ${id} is the current one: POST /v1/webhook-secret/rotate replaces it (with previous_expires_in_seconds: 0 it stops signing now)`,
      );
    }
    deps.logger.info({ tenantId, secretId: id }, 'webhook signing secret retired before the end of its grace period');
    return c.body(null, 204);
  });

  return app;
}
