import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { Logger } from '@notify/runtime';
import type { AppEnv } from '../env.js';
import { noMetrics } from '../metrics.js';
import { requestContext } from './request-context.js';

// A logger that records the level and message of every line.
function recordingLogger(lines: { level: string; msg: string | undefined; obj: object }[]): Logger {
  const at =
    (level: string) =>
    (obj: object, msg?: string): void => {
      lines.push({ level, msg, obj });
    };
  const logger: Logger = { error: at('error'), warn: at('warn'), info: at('info'), debug: at('debug'), child: () => logger };
  return logger;
}

function app(lines: { level: string; msg: string | undefined; obj: object }[]) {
  const a = new Hono<AppEnv>();
  a.use('*', requestContext({ logger: recordingLogger(lines), metrics: noMetrics }));
  a.post('/v1/notifications', (c) => c.json({ id: 'ntf_1' }, 202));
  a.get('/v1/notifications/:id', (c) => c.json({ type: 'not_found' }, 404));
  a.get('/boom', (c) => c.json({ type: 'internal' }, 500));
  a.get('/busy', (c) => c.json({ type: 'overloaded' }, 503));
  return a;
}

describe('requestContext', () => {
  it('logs a successful request at debug, a 4xx at info, a 503 at warn and another 5xx at error, each with its ids and route pattern', async () => {
    const lines: { level: string; msg: string | undefined; obj: object }[] = [];
    const a = app(lines);
    const ok = await a.request('/v1/notifications', { method: 'POST', headers: { 'x-request-id': 'r-1' } });
    await a.request('/v1/notifications/ntf_x', { headers: { 'x-request-id': 'r-2' } });
    await a.request('/boom', { headers: { 'x-request-id': 'r-3' } });
    await a.request('/busy', { headers: { 'x-request-id': 'r-4' } });
    expect(ok.headers.get('x-request-id')).toBe('r-1');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['debug', 'request'],
      ['info', 'request'],
      ['error', 'request failed'],
      ['warn', 'request answered 503: unavailable'],
    ]);
    expect(lines[0]?.obj).toMatchObject({ reqId: 'r-1', method: 'POST', route: '/v1/notifications', status: 202 });
    expect(lines[1]?.obj).toMatchObject({ reqId: 'r-2', method: 'GET', route: '/v1/notifications/:id', status: 404 });
  });

  it('labels a page of a sub-app with a catch-all by the route that answered, an unknown path as unmatched', async () => {
    const routes: string[] = [];
    const a = new Hono<AppEnv>();
    a.use('*', requestContext({ logger: recordingLogger([]), metrics: { ...noMetrics, observeHttp: (l) => void routes.push(l.route) } }));
    const sub = new Hono<AppEnv>();
    sub.use('*', async (_c, next) => next());
    sub.get('/notifications', (c) => c.text('page'));
    sub.all('*', (c) => c.text('no such page', 404));
    a.route('/console', sub);
    a.use('/v1/*', async (c, next) => (c.req.header('authorization') ? next() : c.json({ code: 'unauthorized' }, 401)));
    a.get('/v1/notifications', (c) => c.json([]));
    await a.request('/console/notifications');
    await a.request('/console/nope');
    await a.request('/v1/notifications');
    await a.request('/elsewhere');
    expect(routes).toEqual(['/console/notifications', 'unmatched', '/v1/notifications', 'unmatched']);
  });
});
