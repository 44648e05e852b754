import { createServer } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, IdempotencyConflictError, IdempotencyInProgressError, ValidationError } from '@notify/outbox';
import {
  HTTP_PROBLEM_CODES,
  PROBLEM_CATALOG,
  PROBLEM_TYPE_BASE,
  ProblemError,
  answerClientError,
  problemFromError,
  problemResponse,
} from './problem.js';

describe('problem catalog', () => {
  it('has a status and title for every outbox error code and every HTTP code', () => {
    for (const code of [...ERROR_CODES, ...HTTP_PROBLEM_CODES]) {
      expect(PROBLEM_CATALOG[code], code).toBeDefined();
      expect(PROBLEM_CATALOG[code].status).toBeGreaterThanOrEqual(400);
    }
  });
});

describe('problemFromError', () => {
  it('keeps a ValidationError’s code and field issues (422)', () => {
    const err = new ValidationError('validation_failed', 'bad', [{ path: 'to', message: 'must be an email address' }]);
    const { body } = problemFromError(err, '/v1/notifications');
    expect(body).toEqual({
      type: `${PROBLEM_TYPE_BASE}validation_failed`,
      title: PROBLEM_CATALOG.validation_failed.title,
      status: 422,
      detail: 'bad',
      instance: '/v1/notifications',
      code: 'validation_failed',
      errors: [{ path: 'to', message: 'must be an email address' }],
    });
  });
  it('maps unknown_channel, bad_expiry and payload_too_large to their own types', () => {
    expect(problemFromError(new ValidationError('unknown_channel', 'x')).body.type).toBe(`${PROBLEM_TYPE_BASE}unknown_channel`);
    expect(problemFromError(new ValidationError('bad_expiry', 'x')).body.status).toBe(422);
    expect(problemFromError(new ValidationError('payload_too_large', 'x')).body.status).toBe(413);
  });
  it('names the original on an idempotency conflict', () => {
    const { body } = problemFromError(new IdempotencyConflictError('ntf_X'));
    expect(body).toMatchObject({ status: 422, code: 'idempotency_conflict', existing_id: 'ntf_X' });
  });
  it('tells the client when to retry an in-progress key', () => {
    const { body, headers } = problemFromError(new IdempotencyInProgressError());
    expect(body.status).toBe(409);
    expect(headers['retry-after']).toBe('1');
  });
  it('hides the message of an unexpected error', () => {
    const { body, expected } = problemFromError(new Error('password=hunter2 in a stack'));
    expect(body).toMatchObject({ status: 500, code: 'internal_error' });
    expect(JSON.stringify(body)).not.toContain('hunter2');
    expect(expected).toBe(false);
  });
  it('reports a lost database connection as 503', () => {
    const err = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(problemFromError(err).body).toMatchObject({ status: 503, code: 'database_unreachable' });
  });
  it('carries ProblemError extensions and headers', () => {
    const { body, headers } = problemFromError(
      new ProblemError('not_ready', 'kafka', { extensions: { checks: { kafka: 'unavailable' } }, headers: { 'retry-after': '5' } }),
    );
    expect(body).toMatchObject({ status: 503, checks: { kafka: 'unavailable' } });
    expect(headers).toEqual({ 'retry-after': '5' });
  });
});

describe('problemResponse', () => {
  it('is application/problem+json with the problem status', async () => {
    const res = problemResponse(problemFromError(new ProblemError('not_found', 'no notification x')).body);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/problem+json');
    expect(await res.json()).toMatchObject({ type: `${PROBLEM_TYPE_BASE}not_found`, detail: 'no notification x' });
  });
});

describe('answerClientError', () => {
  /** What a server with the listener answers to `raw` bytes (a request Node's parser refuses). */
  async function answerTo(raw: string): Promise<{ head: string; body: unknown }> {
    const text = await replyTo(raw);
    const [head, body] = text.split('\r\n\r\n');
    return { head: head!, body: JSON.parse(body!) };
  }

  /** Everything a server with the listener sends back to `raw` until it closes; `/slow` answers in two steps. */
  async function replyTo(raw: string): Promise<string> {
    const server = createServer((req, res) => {
      if (req.url !== '/slow') return void res.end('ok');
      res.writeHead(200, { 'content-length': '2' });
      res.flushHeaders();
      setTimeout(() => res.end('ok'), 100);
    });
    server.on('clientError', answerClientError);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const reply = await new Promise<string>((resolve, reject) => {
        const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () => socket.end(raw));
        let text = '';
        socket.on('data', (d: Buffer) => (text += d.toString()));
        socket.on('end', () => resolve(text));
        socket.on('error', reject);
      });
      return reply;
    } finally {
      server.close();
    }
  }

  it('answers a malformed request line with 400 problem+json, where Node wrote a bare 400', async () => {
    const { head, body } = await answerTo('NOT HTTP AT ALL\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toContain('content-type: application/problem+json');
    expect(body).toMatchObject({ status: 400, code: 'malformed_request', type: `${PROBLEM_TYPE_BASE}malformed_request` });
  });

  it('writes nothing into a response already begun: a pipelined bad request closes the connection', async () => {
    const reply = await replyTo('GET /slow HTTP/1.1\r\nhost: x\r\n\r\nNOT HTTP AT ALL\r\n\r\n');
    expect(reply).toMatch(/^HTTP\/1\.1 200 /);
    expect(reply).not.toContain('HTTP/1.1 400');
  });

  it('answers headers over the limit with 431 problem+json', async () => {
    const { head, body } = await answerTo(`GET / HTTP/1.1\r\nhost: x\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(head).toMatch(/^HTTP\/1\.1 431 /);
    expect(body).toMatchObject({ status: 431, code: 'headers_too_large' });
  });
});
