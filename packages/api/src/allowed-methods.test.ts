import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { allowedMethods } from './allowed-methods.js';

function app() {
  const a = new Hono();
  a.use('*', async (_c, next) => next());
  const items = new Hono();
  items.get('/', (c) => c.text('list'));
  items.post('/', (c) => c.text('create'));
  items.get('/:id', (c) => c.text('one'));
  items.delete('/:id', (c) => c.text('gone'));
  items.post('/:id/archive', (c) => c.text('archived'));
  a.route('/items', items);
  a.all('/pages/*', (c) => c.text('a page for every method'));
  return a;
}

describe('allowedMethods', () => {
  it('lists the methods of the routes that match the path, from the router, with HEAD where GET is and OPTIONS', () => {
    const a = app();
    expect(allowedMethods(a, '/items')).toEqual(['GET', 'HEAD', 'POST', 'OPTIONS']);
    expect(allowedMethods(a, '/items/7')).toEqual(['GET', 'HEAD', 'DELETE', 'OPTIONS']);
    expect(allowedMethods(a, '/items/7/archive')).toEqual(['POST', 'OPTIONS']);
  });
  it('is empty for a path no route matches, and middleware or catch-all routes (method ALL) do not count', () => {
    const a = app();
    expect(allowedMethods(a, '/nothing')).toEqual([]);
    expect(allowedMethods(a, '/pages/about')).toEqual([]);
  });
  it('counts a route added later without anything else to change', () => {
    const a = app();
    a.patch('/items/:id', (c) => c.text('patched'));
    expect(allowedMethods(a, '/items/7')).toEqual(['GET', 'HEAD', 'PATCH', 'DELETE', 'OPTIONS']);
  });
});
