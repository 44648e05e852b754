import { Readable } from 'node:stream';
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import type { AppEnv } from '../env.js';
import { problemFromError, problemResponse } from '../problem.js';
import { MAX_BODY_BYTES, jsonBody } from './json-body.js';

function app() {
  const a = new Hono<AppEnv>();
  a.onError((err) => problemResponse(problemFromError(err).body, problemFromError(err).headers));
  a.post('/', jsonBody(), (c) => c.json({ got: c.get('json') }));
  a.post('/optional', jsonBody(MAX_BODY_BYTES, { optional: true }), (c) => c.json({ got: c.get('json') ?? 'nothing' }));
  return a;
}

const post = (body: RequestInit['body'], headers: Record<string, string>) =>
  app().request('/', { method: 'POST', body, headers, duplex: 'half' });

describe('jsonBody', () => {
  it('passes parsed JSON on', async () => {
    const res = await post('{"a":1}', { 'content-type': 'application/json; charset=utf-8' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ got: { a: 1 } });
  });
  it('accepts +json media types', async () => {
    expect((await post('[]', { 'content-type': 'application/merge-patch+json' })).status).toBe(200);
  });
  it.each([['text/plain'], ['application/x-www-form-urlencoded'], ['application/jsonx']])('415 for %s', async (type) => {
    const res = await post('{}', { 'content-type': type });
    expect(res.status).toBe(415);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ type: 'https://notify.dev/problems/unsupported_media_type', status: 415 });
  });
  it('415 without a content type', async () => {
    expect((await post(new Uint8Array([123, 125]), {})).status).toBe(415);
  });
  it('413 when Content-Length says more than 64 KiB, before reading', async () => {
    const body = JSON.stringify({ x: 'a'.repeat(MAX_BODY_BYTES) });
    const res = await post(body, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) });
    expect(res.status).toBe(413);
    expect(await res.json()).toMatchObject({ code: 'payload_too_large', detail: expect.stringContaining('65536') });
  });
  it('413 when a streamed body without Content-Length grows past 64 KiB', async () => {
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 200 * 1024) return controller.close();
        sent += 16 * 1024;
        controller.enqueue(new Uint8Array(16 * 1024).fill(32));
      },
    });
    const res = await post(stream, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(200 * 1024); // it stopped reading at the limit
  });
  it('a body of exactly 64 KiB is read', async () => {
    const body = JSON.stringify({ x: 'a'.repeat(MAX_BODY_BYTES - 8) });
    expect(Buffer.byteLength(body)).toBe(MAX_BODY_BYTES);
    expect((await post(body, { 'content-type': 'application/json' })).status).toBe(200);
  });
  it('400 for malformed JSON, without echoing the body', async () => {
    const res = await post('{"channel": "email", secret', { 'content-type': 'application/json' });
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body).toMatchObject({ type: 'https://notify.dev/problems/malformed_json', status: 400, title: 'Malformed JSON' });
    expect(JSON.stringify(body)).not.toContain('secret');
  });

  describe('optional: a request without a body passes with nothing parsed', () => {
    const postOptional = (body: RequestInit['body'], headers: Record<string, string>) =>
      app().request('/optional', { method: 'POST', body, headers, duplex: 'half' });
    it('no body, with or without a content type', async () => {
      expect(await (await postOptional(undefined, {})).json()).toEqual({ got: 'nothing' });
      expect(await (await postOptional(undefined, { 'content-type': 'application/json' })).json()).toEqual({ got: 'nothing' });
    });
    it('a body is still checked: parsed when JSON, 415 for another type, 400 when malformed', async () => {
      expect(await (await postOptional('{"a":1}', { 'content-type': 'application/json' })).json()).toEqual({ got: { a: 1 } });
      expect((await postOptional('a=1', { 'content-type': 'application/x-www-form-urlencoded' })).status).toBe(415);
      expect((await postOptional('{', { 'content-type': 'application/json' })).status).toBe(400);
    });
    it('on @hono/node-server, by the headers that announce a body (RFC 9112)', async () => {
      const node = (chunks: string[], headers: Record<string, string>) =>
        app().request('/optional', { method: 'POST', headers }, { incoming: Readable.from(chunks.map((x) => Buffer.from(x))) });
      expect(await (await node([], {})).json()).toEqual({ got: 'nothing' });
      expect(await (await node([], { 'content-length': '0' })).json()).toEqual({ got: 'nothing' });
      expect(await (await node([], { 'content-length': '0', 'content-type': 'application/json' })).json()).toEqual({ got: 'nothing' });
      const chunked = await node(['{"a":', '2}'], { 'transfer-encoding': 'chunked', 'content-type': 'application/json' });
      expect(await chunked.json()).toEqual({ got: { a: 2 } });
      expect((await node(['{}'], { 'content-length': '2' })).status).toBe(415); // a body without a type
    });
  });

  describe('on @hono/node-server, read from the Node request (c.env.incoming)', () => {
    const postNode = (chunks: readonly (string | Buffer)[], headers: Record<string, string>) =>
      app().request(
        '/',
        { method: 'POST', headers },
        {
          incoming: Readable.from(
            chunks.map((x) => Buffer.from(x)),
            { objectMode: false },
          ),
        },
      );

    it('passes parsed JSON on, across chunks and with a multi-byte character split between them', async () => {
      const euro = Buffer.from('"€"');
      const res = await postNode([Buffer.from('\ufeff{"a":'), euro.subarray(0, 2), euro.subarray(2), '}'], {
        'content-type': 'application/json',
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ got: { a: '€' } });
    });
    it('413 when Content-Length says more than 64 KiB, before reading', async () => {
      const res = await postNode(['{}'], { 'content-type': 'application/json', 'content-length': String(MAX_BODY_BYTES + 1) });
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ code: 'payload_too_large' });
    });
    it('413 when a body without Content-Length grows past 64 KiB', async () => {
      const res = await postNode(['{"x":"', 'a'.repeat(MAX_BODY_BYTES), '"}'], { 'content-type': 'application/json' });
      expect(res.status).toBe(413);
      expect(await res.json()).toMatchObject({ code: 'payload_too_large' });
    });
    it('400 for bytes that are not JSON', async () => {
      const res = await postNode(['{"a":'], { 'content-type': 'application/json' });
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ code: 'malformed_json' });
    });
  });
});
