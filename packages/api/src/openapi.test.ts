import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApiDocument, queryParametersByRoute, renderDocsPage } from './openapi.js';
import { NotificationRequest } from './schemas.js';

describe('the OpenAPI document', () => {
  const doc = buildOpenApiDocument() as any;

  it('publishes the request schema generated from NotificationRequest (held equal to the SQL rules by test/sql-enqueue)', () => {
    const { $schema: _s, ...expected } = z.toJSONSchema(NotificationRequest, { io: 'input', target: 'draft-2020-12' }) as Record<
      string,
      unknown
    >;
    expect(doc.components.schemas.NotificationRequest).toEqual(expected);
    expect(doc.components.schemas.NotificationRequest.additionalProperties).toBe(false);
    expect(doc.paths['/v1/notifications'].post.requestBody.content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/NotificationRequest',
    });
  });
  it('lists every endpoint and status code of the API', () => {
    const statuses = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).sort();
    expect(statuses('/v1/notifications', 'post')).toEqual(['200', '202', '400', '401', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/notifications', 'get')).toEqual(['200', '400', '401', '429', '503']);
    expect(statuses('/v1/notifications/{id}', 'get')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/notifications/{id}/attempts', 'get')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/notifications/{id}/actions', 'get')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/notifications/{id}/cancel', 'post')).toEqual(['200', '400', '401', '404', '409', '429', '503']);
    expect(statuses('/v1/notifications/{id}/retry', 'post')).toEqual(['202', '400', '401', '404', '409', '429', '503']);
    expect(statuses('/v1/templates', 'post')).toEqual(['201', '400', '401', '409', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/templates/{name}/versions/{version}', 'delete')).toEqual(['204', '400', '401', '404', '409', '429', '503']);
    expect(statuses('/v1/templates/{name}/preview', 'post')).toEqual(['200', '400', '401', '404', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/suppressions', 'get')).toEqual(['200', '400', '401', '429', '503']);
    expect(statuses('/v1/webhook-secret/rotate', 'post')).toEqual(['201', '400', '401', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/webhook-secret/{id}', 'delete')).toEqual(['204', '400', '401', '404', '409', '429', '503']);
    expect(statuses('/v1/callbacks', 'put')).toEqual(['200', '201', '400', '401', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/callbacks', 'get')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/callbacks', 'delete')).toEqual(['204', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/erasures', 'post')).toEqual(['200', '400', '401', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/endpoints', 'get')).toEqual(['200', '400', '401', '429', '503']);
    expect(statuses('/v1/endpoints/{id}', 'get')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/endpoints/{id}', 'patch')).toEqual(['200', '400', '401', '404', '413', '415', '422', '429', '503']);
    expect(statuses('/v1/endpoints/{id}/enable', 'post')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/endpoints/{id}/disable', 'post')).toEqual(['200', '400', '401', '404', '429', '503']);
    expect(statuses('/v1/endpoints/{id}/actions', 'get')).toEqual(['200', '400', '401', '404', '429', '503']);
    // Health, readiness and metrics live on the admin port, apart from the public API.
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/v1/'))).toEqual([]);
  });
  it('gives every /v1 operation the rate-limit and overload answers, with their headers', () => {
    const operations = Object.values(doc.paths).flatMap((path: any) => Object.values(path)) as any[];
    expect(operations.length).toBeGreaterThan(20);
    for (const op of operations) {
      expect(Object.keys(op.responses['429'].headers).sort()).toEqual([
        'RateLimit-Limit',
        'RateLimit-Policy',
        'RateLimit-Remaining',
        'RateLimit-Reset',
        'Retry-After',
        'X-Request-Id',
      ]);
      // Every answer names its request; every one but a 401 (no key, no token) and a 503 says what the token left.
      for (const [status, answer] of Object.entries(op.responses as Record<string, { headers: Record<string, unknown> }>)) {
        expect(answer.headers['X-Request-Id'], status).toBeDefined();
        expect(answer.headers['RateLimit-Remaining'] !== undefined, status).toBe(status !== '401' && status !== '503');
      }
      expect(op.responses['400'].description).toContain('invalid_query');
      expect(op.responses['429'].description).toContain('rate_limited');
      expect(op.responses['503'].headers['Retry-After']).toBeDefined();
      expect(op.responses['503'].description).toMatch(/overloaded.*database_unreachable/);
    }
    // A route with a 503 of its own keeps it beside the common ones.
    expect(doc.paths['/v1/webhook-secret/rotate'].post.responses['503'].description).toMatch(/^`secrets_key_missing`.*`overloaded`/);
    expect(doc.paths['/v1/notifications'].post.responses['400'].description).toMatch(/^`malformed_json`.*`invalid_query`/);
  });
  it('has no dangling $ref', () => {
    const refs = JSON.stringify(doc).match(/#\/components\/schemas\/\w+/g) ?? [];
    for (const r of new Set(refs)) expect(doc.components.schemas[r.split('/').pop()!], r).toBeDefined();
  });
  /** The query parameters of GET /v1/notifications, in ListQuery's order. */
  const LIST_PARAMETERS = ['state', 'to', 'dead_reason', 'last_error_prefix', 'has_last_error', 'limit', 'cursor'];
  it('describes the list query from the ListQuery schema', () => {
    const params = doc.paths['/v1/notifications'].get.parameters;
    expect(params.map((p: any) => p.name)).toEqual(LIST_PARAMETERS);
    expect(params.find((p: any) => p.name === 'last_error_prefix').schema).toMatchObject({ type: 'string', maxLength: 200 });
    expect(params.find((p: any) => p.name === 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 25 });
  });
  it('gives strictQuery the query parameters of every operation, by Hono route', () => {
    const byRoute = queryParametersByRoute(doc);
    expect(byRoute.get('GET /v1/notifications')).toEqual(LIST_PARAMETERS);
    expect(byRoute.get('DELETE /v1/suppressions')).toEqual(['channel', 'to', 'category']);
    expect(byRoute.get('GET /v1/notifications/:id')).toEqual([]);
    expect(byRoute.get('DELETE /v1/templates/:name/versions/:version')).toEqual([]);
    expect(byRoute.get('POST /v1/notifications')).toEqual([]);
    expect(byRoute.size).toBe(Object.values(doc.paths).flatMap((ops: any) => Object.keys(ops)).length);
  });
  it('renders a docs page with every operation and no scripts', () => {
    const html = renderDocsPage(doc);
    expect(html).toContain('POST /v1/notifications/{id}/retry');
    expect(html).toContain('href="/openapi.json"');
    expect(html).not.toContain('<script');
  });
});
