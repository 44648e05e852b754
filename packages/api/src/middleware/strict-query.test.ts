import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../env.js';
import { problemFromError, problemResponse } from '../problem.js';
import { strictQuery } from './strict-query.js';

function app() {
  const a = new Hono<AppEnv>();
  a.onError((err) => problemResponse(problemFromError(err).body));
  a.use('*', strictQuery(new Map([['GET /items', ['state', 'limit']]])));
  a.get('/items', (c) => c.json(c.req.query()));
  a.get('/items/:id', (c) => c.json({ id: c.req.param('id') }));
  return a;
}

const get = async (path: string) => {
  const res = await app().request(path);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe('strictQuery', () => {
  it('lets the parameters the route takes through, each once', async () => {
    expect(await get('/items?state=sent&limit=2')).toEqual({ status: 200, body: { state: 'sent', limit: '2' } });
    expect((await get('/items/7')).status).toBe(200);
  });
  it('refuses a repeated parameter, even percent-encoded, naming it', async () => {
    const { status, body } = await get('/items?state=sent&%73tate=dead');
    expect(status).toBe(400);
    expect(body).toMatchObject({
      code: 'invalid_query',
      errors: [{ path: 'state', message: 'given more than once (2 times); give it once' }],
    });
    expect(body.detail).toContain('"state"');
  });
  it('refuses a parameter the route does not list, and any on a route that lists none', async () => {
    expect((await get('/items?sort=asc')).body).toMatchObject({
      errors: [{ path: 'sort', message: 'unknown parameter; this operation takes state, limit' }],
    });
    expect((await get('/items/7?state=sent')).body).toMatchObject({
      errors: [{ path: 'state', message: 'unknown parameter; this operation takes none' }],
    });
  });
  it('leaves a request no route matches to the 404', async () => {
    expect((await app().request('/nothing?x=1&x=2')).status).toBe(404);
  });
});
