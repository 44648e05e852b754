import { z } from 'zod';
import { MAX_BATCH_BODY_BYTES, MAX_BODY_BYTES } from './middleware/json-body.js';
import { PROBLEM_CATALOG, PROBLEM_TYPE_BASE, type ProblemCode } from './problem.js';
import { CallbackRequest, CallbackView } from './callback-schemas.js';
import { ErasureRequest, ErasureView } from './erasure-schemas.js';
import { EndpointActionList, EndpointList, EndpointListQuery, EndpointPatch, EndpointView } from './endpoint-schemas.js';
import {
  BulkRetryRequest,
  BulkRetryView,
  SuppressionCreate,
  SuppressionDeleteQuery,
  SuppressionList,
  SuppressionListQuery,
  SuppressionView,
  TemplateActivate,
  TemplateCreate,
  TemplatePreview,
  TemplatePreviewRequest,
  TemplateSummaryList,
  TemplateVersion,
  TemplateVersionList,
  WebhookSecretList,
  WebhookSecretRotate,
  WebhookSecretRotated,
} from './management-schemas.js';
import {
  ActionList,
  AttemptList,
  BatchRequest,
  BatchResponse,
  Health,
  ListQuery,
  MAX_BATCH_ITEMS,
  NotificationList,
  NotificationRequest,
  NotificationView,
  Problem,
} from './schemas.js';

type JsonSchema = Record<string, unknown>;

/** A string field of the document as text (the document is ours: anything else is a bug shown as empty). */
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function strip(schema: JsonSchema): JsonSchema {
  const { $schema: _s, $id: _i, ...rest } = schema;
  return rest;
}

function componentSchemas(): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  registry.add(NotificationRequest, { id: 'NotificationRequest' });
  registry.add(NotificationView, { id: 'Notification' });
  registry.add(NotificationList, { id: 'NotificationList' });
  registry.add(BatchRequest, { id: 'BatchRequest' });
  registry.add(BatchResponse, { id: 'BatchResponse' });
  registry.add(AttemptList, { id: 'AttemptList' });
  registry.add(ActionList, { id: 'ActionList' });
  registry.add(Problem, { id: 'Problem' });
  registry.add(Health, { id: 'Health' });
  const management = {
    TemplateCreate,
    TemplateVersion,
    TemplateVersionList,
    TemplateSummaryList,
    TemplateActivate,
    TemplatePreviewRequest,
    TemplatePreview,
    SuppressionCreate,
    SuppressionView,
    SuppressionList,
    WebhookSecretList,
    WebhookSecretRotate,
    WebhookSecretRotated,
    BulkRetryRequest,
    BulkRetryView,
    CallbackRequest,
    CallbackView,
    ErasureRequest,
    ErasureView,
    Endpoint: EndpointView,
    EndpointList,
    EndpointPatch,
    EndpointActionList,
  };
  for (const [id, schema] of Object.entries(management)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { uri: (id) => `#/components/schemas/${id}`, target: 'draft-2020-12', io: 'input' }) as {
    schemas: Record<string, JsonSchema>;
  };
  return Object.fromEntries(Object.entries(schemas).map(([k, v]) => [k, strip(v)]));
}

function listParameters(query: z.ZodType = ListQuery): JsonSchema[] {
  const schema = z.toJSONSchema(query, { io: 'input', target: 'draft-2020-12' }) as {
    properties: Record<string, JsonSchema>;
    required?: string[];
  };
  return Object.entries(schema.properties).map(([name, s]) => {
    const { description, ...rest } = s;
    return { name, in: 'query', required: schema.required?.includes(name) ?? false, ...(description ? { description } : {}), schema: rest };
  });
}

function problemResponse(codes: readonly ProblemCode[]): JsonSchema {
  return {
    description: codes.map((code) => `\`${code}\`: ${PROBLEM_CATALOG[code].title}`).join('; '),
    content: { 'application/problem+json': { schema: ref('Problem') } },
  };
}

function problems(...codes: ProblemCode[]): Record<string, JsonSchema> {
  const byStatus = new Map<number, ProblemCode[]>();
  for (const code of codes) {
    const status = PROBLEM_CATALOG[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries([...byStatus].map(([status, cs]) => [String(status), problemResponse(cs)]));
}

const json = (name: string, description: string, headers?: Record<string, JsonSchema>) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: ref(name) } },
});

const idParameter = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Notification id (ntf_…)',
  schema: { type: 'string', pattern: '^ntf_[0-9A-HJKMNP-TV-Z]{26}$' },
};

const location = { Location: { description: '/v1/notifications/{id}', schema: { type: 'string' } } };
const retryLocation = { Location: { description: '/v1/notifications/retries/{id}: the bulk retry', schema: { type: 'string' } } };
const templateLocation = {
  Location: { description: '/v1/templates/{name}/versions/{version}: the new version', schema: { type: 'string' } },
};

/**
 * The OpenAPI 3.1 document of the API, generated from the zod schemas in schemas.ts: the ones the
 * tests parse responses with, ListQuery that validates the list's query string, and
 * NotificationRequest, which a test holds equal to what PostgreSQL's notify_enqueue_row accepts.
 */
export function buildOpenApiDocument(): JsonSchema {
  const auth = problems('unauthorized');
  return withCommonAnswers({
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'notify',
      version: '1.0.0',
      description:
        'Queue notifications (email, SMS, webhook) for at-least-once delivery with retries. ' +
        `Errors are RFC 9457 problem details whose \`type\` is ${PROBLEM_TYPE_BASE}<code>. JSON fields are snake_case. ` +
        'Every /v1 request is authenticated first, an unknown route too (401 before 404 or 405). A method a path does not take ' +
        'is a 405 `method_not_allowed` whose Allow header lists the ones it takes; OPTIONS answers 204 with that Allow header. ' +
        'Every operation refuses a query parameter it does not list, or one given more than once (400 `invalid_query`).',
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/notifications': {
        post: {
          operationId: 'createNotification',
          summary: 'Queue a notification',
          description:
            'Records the notification and returns at once (202): delivery happens later. With an Idempotency-Key, ' +
            'repeating the same request returns the original (200); the same key with a different request is a 422. ' +
            `Bodies over ${MAX_BODY_BYTES} bytes are refused (413). A W3C traceparent header is carried to the delivery.`,
          parameters: [
            {
              name: 'Idempotency-Key',
              in: 'header',
              required: false,
              schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
            },
            { name: 'traceparent', in: 'header', required: false, schema: { type: 'string' }, description: 'W3C trace context' },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('NotificationRequest') } } },
          responses: {
            '202': json('Notification', 'Queued', location),
            '200': json('Notification', 'A repeat of an earlier request with the same Idempotency-Key: the original', location),
            ...problems('malformed_json', 'unauthorized', 'payload_too_large', 'unsupported_media_type'),
            '422': problemResponse(['validation_failed', 'unknown_channel', 'bad_expiry', 'idempotency_conflict']),
          },
        },
        get: {
          operationId: 'listNotifications',
          summary: 'List notifications, newest first',
          description:
            'Keyset-paged: pass next_cursor as cursor. dead_reason with last_error_prefix, or with has_last_error=false, lists exactly one ' +
            "group of the console's dead page (the same tenant, reason and first 200 characters of last_error); the last-error parameters " +
            'need dead_reason, and state is then dead or absent (otherwise 400 invalid_query).',
          parameters: listParameters(),
          responses: { '200': json('NotificationList', 'A page'), ...problems('unauthorized') },
        },
      },
      '/v1/notifications/batch': {
        post: {
          operationId: 'createNotificationBatch',
          summary: `Queue 1 to ${MAX_BATCH_ITEMS} notifications in one transaction`,
          description:
            'Each item is a notification request with its own optional idempotency_key (the Idempotency-Key header is refused here). ' +
            'The answer (200) has one result per item, in order: { status: 202 | 200, id } (200: the original of a repeated key) ' +
            'or { status: 4xx, problem }. A refused item fails only itself, unless "atomic": true, when one refused item refuses ' +
            `the whole batch (422 batch_refused, nothing queued, items lists each refused index and problem). Bodies up to ${MAX_BATCH_BODY_BYTES} bytes.`,
          parameters: [
            {
              name: 'traceparent',
              in: 'header',
              required: false,
              schema: { type: 'string' },
              description: 'W3C trace context, carried to every item',
            },
          ],
          requestBody: { required: true, content: { 'application/json': { schema: ref('BatchRequest') } } },
          responses: {
            '200': json('BatchResponse', 'One result per item, in order'),
            ...problems('malformed_json', 'unauthorized', 'payload_too_large', 'unsupported_media_type'),
            '422': problemResponse(['validation_failed', 'batch_refused']),
          },
        },
      },
      '/v1/notifications/{id}': {
        get: {
          operationId: 'getNotification',
          summary: 'Look up a notification',
          parameters: [idParameter],
          responses: { '200': json('Notification', 'The notification'), ...auth, ...problems('not_found') },
        },
      },
      '/v1/notifications/{id}/attempts': {
        get: {
          operationId: 'listAttempts',
          summary: 'The delivery attempts of a notification, first to last',
          parameters: [idParameter],
          responses: { '200': json('AttemptList', 'The attempts'), ...auth, ...problems('not_found') },
        },
      },
      '/v1/notifications/{id}/actions': {
        get: {
          operationId: 'listActions',
          summary: 'The manual actions (cancel, retry) taken on a notification, oldest first',
          parameters: [idParameter],
          responses: { '200': json('ActionList', 'The actions'), ...auth, ...problems('not_found') },
        },
      },
      '/v1/notifications/{id}/cancel': {
        post: {
          operationId: 'cancelNotification',
          summary: 'Cancel a queued notification',
          description: 'queued → cancelled (terminal). Cancelling a cancelled notification returns it unchanged.',
          parameters: [idParameter],
          responses: { '200': json('Notification', 'Cancelled'), ...auth, ...problems('not_found', 'invalid_transition') },
        },
      },
      '/v1/notifications/{id}/retry': {
        post: {
          operationId: 'retryNotification',
          summary: 'Re-queue a dead notification',
          description:
            'dead → queued, due now, with max_attempts raised to the attempts made plus NOTIFY_MAX_ATTEMPTS. ' +
            'Recorded in GET /v1/notifications/{id}/actions.',
          parameters: [idParameter],
          responses: {
            '202': json('Notification', 'Re-queued', location),
            ...auth,
            ...problems('not_found', 'invalid_transition', 'notification_expired'),
          },
        },
      },
      ...managementPaths(),
      ...privacyPaths(),
      ...endpointPaths(),
      // /healthz, /readyz and /metrics are served on the admin port (createAdminApp), not here.
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'An API key from `notify api-keys create`' } },
      schemas: componentSchemas(),
    },
  });
}

const seconds = (description: string) => ({ description, schema: { type: 'integer', minimum: 0 } });

/** The IETF RateLimit draft's headers, on every /v1 answer while a limit is configured (middleware/rate-limit.ts). */
const rateLimitHeaders = {
  'RateLimit-Limit': seconds('The burst of the tighter bucket (API key or tenant)'),
  'RateLimit-Remaining': seconds('Whole tokens left in that bucket'),
  'RateLimit-Reset': seconds('Seconds until the bucket is full again; on a 429, until one token is back'),
  'RateLimit-Policy': {
    description: '`<burst>;w=<seconds to refill>`, e.g. `100;w=2` for 50/s with a burst of 100',
    schema: { type: 'string' },
  },
};

/**
 * Answers every /v1 operation can give whatever its route: 400 `invalid_query` for a query
 * parameter it does not list or one given twice (`strictQuery`), 429 `rate_limited` when the API
 * key's or tenant's bucket is empty (NOTIFY_API_RATE_LIMIT, NOTIFY_API_TENANT_RATE_LIMIT), and 503
 * `overloaded` (NOTIFY_API_MAX_IN_FLIGHT, NOTIFY_API_MAX_EVENT_LOOP_DELAY_MS,
 * NOTIFY_API_MAX_EVENT_LOOP_UTILIZATION) or `database_unreachable`, each with Retry-After. A route
 * that documents one of these statuses of its own keeps it, with these codes added to its
 * description.
 */
function withCommonAnswers(doc: JsonSchema): JsonSchema {
  const retryAfter = { 'Retry-After': seconds('Seconds to wait before trying again') };
  const common: Record<string, JsonSchema> = {
    '400': problemResponse(['invalid_query']),
    '429': { ...problemResponse(['rate_limited']), headers: { ...retryAfter, ...rateLimitHeaders } },
    '503': { ...problemResponse(['overloaded', 'database_unreachable']), headers: retryAfter },
  };
  const paths = doc.paths as Record<string, Record<string, { responses: Record<string, JsonSchema> }>>;
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const operation of Object.values(operations)) {
      for (const [status, answer] of Object.entries(common)) {
        const own = operation.responses[status];
        operation.responses[status] = own
          ? { ...answer, description: `${String(own.description)}; ${String(answer.description)}` }
          : answer;
      }
      // Every answer names its request (request-context.ts); every one to a request that took a
      // token says what is left (rate-limit.ts): not a 401 (no key, no bucket) nor a 503 shed
      // before authentication.
      for (const [status, answer] of Object.entries(operation.responses)) {
        const headers = answer.headers as Record<string, JsonSchema> | undefined;
        operation.responses[status] = {
          ...answer,
          headers: { ...headers, ...(status === '401' || status === '503' ? {} : rateLimitHeaders), 'X-Request-Id': requestIdHeader },
        };
      }
    }
  }
  return doc;
}

/** X-Request-Id on every answer: the caller's when it is sane, else a new one (the same id is in the log line of the request). */
const requestIdHeader = {
  description:
    "The request's id: the caller's X-Request-Id when it is 1 to 128 characters of [A-Za-z0-9_.:-], else a new `req_…`; its log line carries it",
  schema: { type: 'string' },
};

/**
 * The query parameters of each /v1 operation of `doc`, by method and Hono route path
 * (`/v1/notifications/{id}` is `/v1/notifications/:id`): what `strictQuery` lets through, so no
 * route takes a parameter this document does not describe.
 */
export function queryParametersByRoute(doc: JsonSchema): Map<string, string[]> {
  const paths = doc.paths as Record<string, Record<string, { parameters?: { name: string; in: string }[] }>>;
  const byRoute = new Map<string, string[]>();
  for (const [path, operations] of Object.entries(paths)) {
    const route = path.replace(/\{(\w+)\}/g, ':$1');
    for (const [method, operation] of Object.entries(operations)) {
      const names = (operation.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name);
      byRoute.set(`${method.toUpperCase()} ${route}`, names);
    }
  }
  return byRoute;
}

const body = (name: string) => ({ required: true, content: { 'application/json': { schema: ref(name) } } });
const nameParameter = { name: 'name', in: 'path', required: true, description: 'Template name', schema: { type: 'string' } };
const versionParameter = {
  name: 'version',
  in: 'path',
  required: true,
  description: 'Template version',
  schema: { type: 'integer', minimum: 1 },
};

/** The management routes: templates, opt-outs, webhook signing secret. */
function managementPaths(): Record<string, JsonSchema> {
  const auth = problems('unauthorized');
  const badBody = problems('malformed_json', 'unsupported_media_type', 'payload_too_large');
  return {
    '/v1/notifications/retry': {
      post: {
        operationId: 'retryNotificationsInBulk',
        summary: 'Re-queue dead notifications matching a filter (at most 10,000)',
        description:
          'Each is re-queued like POST /v1/notifications/{id}/retry (expired ones stay dead), in one transaction. Answers with the count ' +
          'and a bulk id to follow. With an Idempotency-Key a repeat answers 200 with the first run; the same key with another filter is a 422.',
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
          },
        ],
        requestBody: body('BulkRetryRequest'),
        responses: {
          '202': json('BulkRetryView', 'Re-queued', retryLocation),
          '200': json('BulkRetryView', 'A repeat with the same Idempotency-Key: the first run', retryLocation),
          ...auth,
          ...badBody,
          '422': problemResponse(['validation_failed', 'idempotency_conflict']),
        },
      },
    },
    '/v1/notifications/retries/{id}': {
      get: {
        operationId: 'getBulkRetry',
        summary: 'A bulk retry and the current states of the notifications it re-queued',
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        responses: { '200': json('BulkRetryView', 'The bulk retry'), ...auth, ...problems('not_found') },
      },
    },
    '/v1/templates': {
      post: {
        operationId: 'createTemplateVersion',
        summary: 'Store a new version of a template',
        description:
          'Version 1 for a new name, else the newest + 1. Versions never change. A template that does not parse, or that uses a variable ' +
          '`sample_data` lacks, is refused with 422 `template_invalid`; its `errors` give the field, offset, line and column. Rendering stays at send time. ' +
          "A version whose channel differs from the template's newest version is refused with 409 `template_channel_conflict`: a template keeps one channel.",
        requestBody: body('TemplateCreate'),
        responses: {
          '201': json('TemplateVersion', 'Stored', templateLocation),
          ...auth,
          ...badBody,
          ...problems('template_channel_conflict'),
          '422': problemResponse(['validation_failed', 'template_invalid']),
        },
      },
      get: {
        operationId: 'listTemplates',
        summary: 'Every template name with its newest and active version',
        responses: { '200': json('TemplateSummaryList', 'The templates'), ...auth },
      },
    },
    '/v1/templates/{name}': {
      get: {
        operationId: 'listTemplateVersions',
        summary: 'The versions of a template, newest first',
        parameters: [nameParameter],
        responses: { '200': json('TemplateVersionList', 'The versions'), ...auth, ...problems('not_found') },
      },
    },
    '/v1/templates/{name}/versions/{version}': {
      get: {
        operationId: 'getTemplateVersion',
        summary: 'One version of a template',
        parameters: [nameParameter, versionParameter],
        responses: { '200': json('TemplateVersion', 'The version'), ...auth, ...problems('not_found') },
      },
      delete: {
        operationId: 'deleteTemplateVersion',
        summary: 'Delete a version that nothing queued uses',
        description: 'Refused (409 `in_use`) for the active version and for a version queued notifications would render.',
        parameters: [nameParameter, versionParameter],
        responses: { '204': { description: 'Deleted' }, ...auth, ...problems('not_found', 'in_use') },
      },
    },
    '/v1/templates/{name}/active': {
      put: {
        operationId: 'activateTemplateVersion',
        summary: 'Set the version notifications without a pinned version render',
        description:
          'Without an activation the newest version renders. Sends pick the change up within 5 s (the dispatcher caches templates).',
        parameters: [nameParameter],
        requestBody: body('TemplateActivate'),
        responses: { '200': json('TemplateVersion', 'Now active'), ...auth, ...badBody, ...problems('not_found', 'validation_failed') },
      },
    },
    '/v1/templates/{name}/preview': {
      post: {
        operationId: 'previewTemplate',
        summary: 'Render a version with sample data, as a send would',
        parameters: [nameParameter],
        requestBody: body('TemplatePreviewRequest'),
        responses: {
          '200': json('TemplatePreview', 'Rendered'),
          ...auth,
          ...badBody,
          ...problems('not_found'),
          '422': problemResponse(['validation_failed', 'template_invalid']),
        },
      },
    },
    '/v1/suppressions': {
      post: {
        operationId: 'addSuppression',
        summary: 'Record an opt-out',
        description:
          'For one category, or every category ("*", the default) of a channel. Repeating it updates the reason. Checked at send time.',
        requestBody: body('SuppressionCreate'),
        responses: { '201': json('SuppressionView', 'Recorded'), ...auth, ...badBody, ...problems('validation_failed') },
      },
      get: {
        operationId: 'listSuppressions',
        summary: 'List opt-outs (cursor paging)',
        parameters: listParameters(SuppressionListQuery),
        responses: { '200': json('SuppressionList', 'A page'), ...auth },
      },
      delete: {
        operationId: 'removeSuppression',
        summary: 'Remove an opt-out',
        parameters: listParameters(SuppressionDeleteQuery),
        responses: { '204': { description: 'Removed' }, ...auth, ...problems('not_found') },
      },
    },
    '/v1/webhook-secret': {
      get: {
        operationId: 'listWebhookSecrets',
        summary: "The tenant's webhook signing secrets that sign now (ids and dates, never the secret)",
        responses: { '200': json('WebhookSecretList', 'The secrets'), ...auth },
      },
    },
    '/v1/webhook-secret/rotate': {
      post: {
        operationId: 'rotateWebhookSecret',
        summary: 'Rotate the webhook signing secret',
        description:
          'Returns the new secret once (never again: it is stored sealed with AES-256-GCM under NOTIFY_SECRETS_KEY). For ' +
          '`previous_expires_in_seconds` (default NOTIFY_SECRET_ROTATION_GRACE_MS, 24 h; 0 ends them now) the previous ' +
          'secrets sign too: webhooks carry every signature in one webhook-signature header. The body is optional. Without ' +
          'NOTIFY_SECRETS_KEY the service refuses (503 `secrets_key_missing`).',
        requestBody: { ...body('WebhookSecretRotate'), required: false },
        responses: {
          '201': json('WebhookSecretRotated', 'Rotated'),
          ...auth,
          ...badBody,
          ...problems('validation_failed', 'secrets_key_missing'),
        },
      },
    },
    '/v1/webhook-secret/{id}': {
      delete: {
        operationId: 'retireWebhookSecret',
        summary: "End a previous secret's grace period now",
        description:
          "For a secret that leaked after a rotation: it stops signing (within the dispatchers' 30 s cache of secrets). " +
          'The current secret is refused (409 `webhook_secret_current`): rotate it, with previous_expires_in_seconds 0.',
        parameters: [
          { name: 'id', in: 'path', required: true, description: 'Secret id (GET /v1/webhook-secret)', schema: { type: 'string' } },
        ],
        responses: { '204': { description: 'Retired' }, ...auth, ...problems('not_found', 'webhook_secret_current') },
      },
    },
  };
}

/** Status callbacks and erasure (issue 15): docs/callbacks.md, docs/retention.md. */
function privacyPaths(): Record<string, JsonSchema> {
  const auth = problems('unauthorized');
  const badBody = problems('malformed_json', 'unsupported_media_type', 'payload_too_large');
  return {
    '/v1/callbacks': {
      put: {
        operationId: 'putCallback',
        summary: "Register or replace the tenant's status callback URL",
        description:
          'The URL receives the chosen StatusEventV1 types as Standard Webhooks (body: the event JSON as on <prefix>.events; ' +
          'webhook-id stable across retries; signed with the tenant secret, else NOTIFY_WEBHOOK_SECRET), at least once, retried with ' +
          "the notifications' backoff up to NOTIFY_MAX_ATTEMPTS. The URL and the addresses its host resolves to are checked by the " +
          'SSRF policy now (422 `callback_url_refused`) and at every send.',
        requestBody: body('CallbackRequest'),
        responses: {
          '201': json('CallbackView', 'Registered'),
          '200': json('CallbackView', 'Replaced'),
          ...auth,
          ...badBody,
          '422': problemResponse(['validation_failed', 'callback_url_refused']),
        },
      },
      get: {
        operationId: 'getCallback',
        summary: "The tenant's callback URL with its pending, failed and dropped counts",
        responses: { '200': json('CallbackView', 'The registration'), ...auth, ...problems('not_found') },
      },
      delete: {
        operationId: 'deleteCallback',
        summary: 'Remove the callback URL and its pending deliveries',
        responses: { '204': { description: 'Removed' }, ...auth, ...problems('not_found') },
      },
    },
    '/v1/erasures': {
      post: {
        operationId: 'eraseRecipient',
        summary: "Erase a recipient's address and content from every stored row of the tenant",
        description:
          'In one transaction: queued notifications to the recipient are cancelled, then its address, bodies, subjects, data, ' +
          'metadata and error texts are erased from notifications, attempts, unpurged outbox rows, refused rows, callback deliveries ' +
          'and bulk-retry filters; ids, states, counts and times stay. Opt-outs are kept unless delete_suppressions is true. ' +
          'Recorded without the address (its sha256). Repeating it answers 0: idempotent.',
        requestBody: body('ErasureRequest'),
        responses: { '200': json('ErasureView', 'Erased'), ...auth, ...badBody, ...problems('validation_failed') },
      },
    },
  };
}

/** Endpoint health (issue 15): docs/endpoints.md. */
function endpointPaths(): Record<string, JsonSchema> {
  const auth = problems('unauthorized');
  const endpointId = {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Endpoint id (ep_…)',
    schema: { type: 'string', pattern: '^ep_[0-9a-f]{24}$' },
  };
  const action = (operationId: string, summary: string, description: string) => ({
    post: {
      operationId,
      summary,
      description,
      parameters: [endpointId],
      responses: { '200': json('Endpoint', 'The endpoint after the action'), ...auth, ...problems('not_found') },
    },
  });
  return {
    '/v1/endpoints': {
      get: {
        operationId: 'listEndpoints',
        summary: "The tenant's endpoints with their health, in id order (cursor paging)",
        description:
          "An endpoint is a webhook origin or a channel's SMTP / SMS provider; it has a row once a delivery to it answered. " +
          'Shows the circuit state, failure streak, probe time, disable, and the rate limit in force.',
        parameters: listParameters(EndpointListQuery),
        responses: { '200': json('EndpointList', 'A page'), ...auth },
      },
    },
    '/v1/endpoints/{id}': {
      get: {
        operationId: 'getEndpoint',
        summary: 'One endpoint with its health',
        parameters: [endpointId],
        responses: { '200': json('Endpoint', 'The endpoint'), ...auth, ...problems('not_found') },
      },
      patch: {
        operationId: 'updateEndpoint',
        summary: "Set or clear the endpoint's own rate limit",
        description:
          'The limit is shared by every dispatcher process; null returns the endpoint to NOTIFY_ENDPOINT_RATE_LIMIT. ' +
          'Dispatchers apply it within 1 s. Recorded in GET /v1/endpoints/{id}/actions when it changes.',
        parameters: [endpointId],
        requestBody: body('EndpointPatch'),
        responses: {
          '200': json('Endpoint', 'The endpoint after the change'),
          ...auth,
          ...problems('malformed_json', 'unsupported_media_type', 'payload_too_large', 'not_found', 'validation_failed'),
        },
      },
    },
    '/v1/endpoints/{id}/enable': action(
      'enableEndpoint',
      'Enable the endpoint: the failure streak restarts and an open circuit closes',
      'Undoes a disable (by the operator or auto) and closes an open circuit; notifications to it are delivered again ' +
        '(dispatchers see it within 1 s). Idempotent: enabling an ok endpoint without failures changes nothing and records nothing.',
    ),
    '/v1/endpoints/{id}/disable': action(
      'disableEndpoint',
      'Disable the endpoint (disabled_by operator)',
      'Notifications to it end dead with dead_reason endpoint_disabled at their next attempt, without a provider call, ' +
        'until it is enabled. Idempotent: disabling an endpoint the operator disabled changes nothing.',
    ),
    '/v1/endpoints/{id}/actions': {
      get: {
        operationId: 'listEndpointActions',
        summary: 'The operator actions (enable, disable, set_rate_limit) taken on an endpoint, oldest first',
        parameters: [endpointId],
        responses: { '200': json('EndpointActionList', 'The actions'), ...auth, ...problems('not_found') },
      },
    },
  };
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/**
 * A self-contained HTML page (no scripts, no CDN) listing every operation of the OpenAPI
 * document with its parameters and responses, linking to /openapi.json for the schemas.
 */
export function renderDocsPage(doc: JsonSchema): string {
  const paths = doc.paths as Record<string, Record<string, JsonSchema>>;
  const sections: string[] = [];
  for (const [path, ops] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const params = ((op.parameters as JsonSchema[] | undefined) ?? [])
        .map(
          (p) =>
            `<li><code>${escapeHtml(text(p.name))}</code> (${escapeHtml(text(p.in))})${p.description ? ` — ${escapeHtml(text(p.description))}` : ''}</li>`,
        )
        .join('');
      const responses = Object.entries(op.responses as Record<string, JsonSchema>)
        .map(([status, r]) => `<li><strong>${status}</strong> ${escapeHtml(text(r.description))}</li>`)
        .join('');
      sections.push(
        `<section><h2><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h2><p>${escapeHtml(text(op.summary))}</p>` +
          (op.description ? `<p>${escapeHtml(text(op.description))}</p>` : '') +
          (params ? `<h3>Parameters</h3><ul>${params}</ul>` : '') +
          `<h3>Responses</h3><ul>${responses}</ul></section>`,
      );
    }
  }
  const info = doc.info as JsonSchema;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>notify API</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .2em}section{border-top:1px solid #ddd}</style>
</head><body><h1>notify API ${escapeHtml(String(info.version))}</h1><p>${escapeHtml(String(info.description))}</p>
<p>Authenticate with <code>Authorization: Bearer &lt;key&gt;</code>. Schemas: <a href="/openapi.json">/openapi.json</a>.</p>
${sections.join('\n')}</body></html>`;
}
