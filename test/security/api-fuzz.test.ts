/**
 * Hostile input, property-based (fast-check), through the real HTTP app (`createApp(...).request()`)
 * on a real PostgreSQL database. For every generated request:
 * - the answer is a 2xx or a 4xx, never a 5xx, and comes back within a deadline (no hang);
 * - every 4xx is RFC 9457 `application/problem+json` whose `status` matches the response;
 * and after all of them: the database holds exactly the notifications the API answered 2xx for
 * (nothing from a rejected request, not even an outbox row), and the captured pino output holds
 * neither the API key nor any marker planted in request bodies.
 *
 * FUZZ_RUNS sets the runs per property (default 150, so this file stays fast in CI;
 * `pnpm test:chaos` runs it with 2000). A failure prints fast-check's seed and path to replay it.
 */
import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Problem, createApp } from '@notify/api';
import { createLogger } from '@notify/cli';
import { fromKysely } from '@notify/outbox';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { issueTestKey, type TestKey } from '../support/chaos/tenants.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 150);
const DEADLINE_MS = 10_000;
/** Planted in request content; must never reach a log line. */
const MARKER = `MARKER${randomBytes(6).toString('hex')}`;

let t: TestDatabase;
let app: ReturnType<typeof createApp>;
let key: TestKey;
const logLines: string[] = [];
/** Ids the API answered 2xx with: the only notifications the database may hold. */
const accepted = new Set<string>();
const statuses = new Map<number, number>();

beforeAll(async () => {
  t = await createTestDatabase();
  key = await issueTestKey(fromKysely(t.db), 'fuzz');
  const destination = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logLines.push(chunk.toString('utf8'));
      cb();
    },
  });
  app = createApp({
    db: t.db,
    config: { retry: { maxAttempts: 3, defaultTtlMs: 3_600_000 } },
    logger: createLogger({ level: 'trace', destination }),
  });
});

afterAll(async () => {
  await t?.close();
});

/** Sends one request and checks the invariants every answer must keep. */
async function send(
  method: string,
  path: string,
  init: { headers?: Record<string, string>; body?: string | Uint8Array } = {},
): Promise<Response> {
  let timer: NodeJS.Timeout | undefined;
  const res = await Promise.race([
    app.request(path, { method, headers: init.headers, body: init.body }),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${method} ${path} did not answer within ${DEADLINE_MS} ms`)), DEADLINE_MS);
    }),
  ]).finally(() => clearTimeout(timer));
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  const text = await res.text();
  const context = `${method} ${path.slice(0, 200)} → ${res.status} ${text.slice(0, 300)}`;
  expect(res.status, context).toBeGreaterThanOrEqual(200);
  expect(res.status, context).toBeLessThan(500);
  if (res.status >= 400) {
    expect(res.headers.get('content-type'), context).toBe('application/problem+json');
    const problem = Problem.parse(JSON.parse(text));
    expect(problem.status, context).toBe(res.status);
    expect(problem.type, context).toMatch(/^https:\/\/notify\.dev\/problems\/[a-z_]+$/);
  } else if (method === 'POST' && path === '/v1/notifications') {
    const id = (JSON.parse(text) as { id: string }).id;
    accepted.add(id);
  }
  return new Response(text, { status: res.status, headers: res.headers });
}

const auth = () => ({ authorization: `Bearer ${key.key}` });
const post = (body: string | Uint8Array, headers: Record<string, string> = {}) =>
  send('POST', '/v1/notifications', { body, headers: { ...auth(), 'content-type': 'application/json', ...headers } });

// Strings that break naive code: NUL, lone surrogates, RTL marks, SQL and template syntax, huge.
const nastyString = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.constantFrom(
    '\u0000',
    `a\u0000${MARKER}`,
    '\ud800',
    '\udfff\ud800',
    '\u202e',
    "'; DROP TABLE notifications; --",
    '{{#each}}{{/each}}',
    '${process.exit(1)}',
    '__proto__',
    'constructor',
    '%00',
    '\\u0000',
    '../../../../etc/passwd',
  ),
  fc.integer({ min: 60_000, max: 70_000 }).map((n) => `${MARKER}${'x'.repeat(n)}`),
);
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { depthSize: 'small' },
  nastyString,
  fc.double(),
  fc.integer(),
  fc.constantFrom(Number.MAX_SAFE_INTEGER + 2, -0, 1e308, 0, -1, 2 ** 31),
  fc.boolean(),
  fc.constant(null),
  fc.array(nastyString, { maxLength: 5 }),
  fc.dictionary(nastyString, nastyString, { maxKeys: 5 }),
);
const validTo: Record<string, string[]> = {
  webhook: ['https://hooks.example.com/in', 'http://example.org/x?y=1'],
  email: ['a@example.com'],
  sms: ['+14155550100'],
};
// Intents that are almost right: known fields with hostile values, plus stray fields.
const nearIntent = fc
  .record(
    {
      channel: fc.oneof(fc.constantFrom('webhook', 'email', 'sms'), anyValue),
      to: fc.oneof(fc.constantFrom(...Object.values(validTo).flat()), anyValue),
      subject: anyValue,
      body: fc.oneof(fc.constant(`hello ${MARKER}`), anyValue),
      template: anyValue,
      template_version: anyValue,
      data: fc.oneof(fc.constant({ secret: MARKER }), fc.dictionary(nastyString, anyValue, { maxKeys: 4 }), anyValue),
      category: anyValue,
      expires_at: fc.oneof(
        fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
        anyValue,
      ),
      ttl_seconds: anyValue,
      metadata: fc.oneof(fc.dictionary(nastyString, nastyString, { maxKeys: 4 }), anyValue),
      [MARKER]: anyValue,
      ['__proto__']: anyValue,
    },
    { requiredKeys: [] },
  )
  .map((o) => JSON.stringify(o));

describe('POST /v1/notifications with hostile bodies', () => {
  it('random JSON values', async () => {
    await fc.assert(
      fc.asyncProperty(fc.jsonValue({ maxDepth: 6 }), async (value) => {
        await post(JSON.stringify(value));
      }),
      { numRuns: RUNS },
    );
  });

  it('near-miss intents: known fields with random types, NUL bytes, lone surrogates, huge strings, stray fields', async () => {
    await fc.assert(
      fc.asyncProperty(nearIntent, async (body) => {
        await post(body);
      }),
      { numRuns: RUNS },
    );
  });

  // PostgreSQL cannot store U+0000 in text, nor the escape \u0000 in jsonb: such content must be
  // refused with a 422 (or accepted in an escaped form), never reach the INSERT and come back a 500.
  describe('content carrying U+0000 (a valid JSON string) is answered 2xx or 422, never 500', () => {
    const cases: [string, Record<string, unknown>][] = [
      ['body', { channel: 'webhook', to: 'https://h.example.com/', body: 'a\u0000b' }],
      ['subject', { channel: 'email', to: 'a@example.com', subject: 's\u0000', body: 'b' }],
      ['data value', { channel: 'webhook', to: 'https://h.example.com/', body: 'b', data: { k: 'v\u0000' } }],
      ['data key', { channel: 'webhook', to: 'https://h.example.com/', body: 'b', data: { 'k\u0000': 1 } }],
      ['metadata', { channel: 'webhook', to: 'https://h.example.com/', body: 'b', metadata: { k: 'v\u0000' } }],
      ['category', { channel: 'webhook', to: 'https://h.example.com/', body: 'b', category: 'c\u0000' }],
      ['to', { channel: 'webhook', to: 'https://h.example.com/\u0000', body: 'b' }],
    ];
    it.each(cases)('in %s', async (_where, intent) => {
      const res = await post(JSON.stringify(intent));
      expect([200, 202, 422]).toContain(res.status);
    });
    // A lone surrogate is valid in a JSON string but not in UTF-8 or jsonb.
    it.each(
      cases.map(([where, intent]): [string, Record<string, unknown>] => [
        where,
        JSON.parse(JSON.stringify(intent).replaceAll('\\u0000', '\\ud800')),
      ]),
    )('lone surrogate in %s', async (_where, intent) => {
      const res = await post(JSON.stringify(intent));
      expect([200, 202, 422]).toContain(res.status);
    });
  });

  it('raw bytes: invalid UTF-8, binary, truncated JSON, under any content type', async () => {
    const contentType = fc.constantFrom(
      'application/json',
      'application/json; charset=utf-8',
      'application/problem+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      '',
      'application/json; charset=latin1',
      'multipart/form-data; boundary=x',
    );
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 2048 }),
      fc.constantFrom(
        Uint8Array.from([0xc3, 0x28]),
        Uint8Array.from([0xff, 0xfe, 0x7b, 0x7d]),
        Uint8Array.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0xed, 0xa0, 0x80, 0x7d]),
      ),
      fc.string({ maxLength: 200 }).map((s) => new TextEncoder().encode(`{"channel":"webhook","to":"https://h.example.com","body":"${s}`)),
      fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => {
        // A valid intent with invalid UTF-8 spliced into the body string.
        const head = new TextEncoder().encode('{"channel":"webhook","to":"https://h.example.com","body":"');
        const tail = new TextEncoder().encode('"}');
        return Uint8Array.from([...head, ...b.filter((x) => x !== 0x22 && x !== 0x5c && x >= 0x20), 0xff, ...tail]);
      }),
    );
    await fc.assert(
      fc.asyncProperty(bytes, contentType, async (body, type) => {
        await send('POST', '/v1/notifications', { body, headers: { ...auth(), ...(type ? { 'content-type': type } : {}) } });
      }),
      { numRuns: RUNS },
    );
  });

  it('deep nesting and oversized bodies', async () => {
    const nested = fc.record({
      depth: fc.integer({ min: 1, max: 40_000 }),
      shape: fc.constantFrom('array', 'object', 'in-data'),
    });
    await fc.assert(
      fc.asyncProperty(nested, async ({ depth, shape }) => {
        let body: string;
        if (shape === 'array') body = `${'['.repeat(depth)}${']'.repeat(depth)}`;
        else if (shape === 'object') body = `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
        else body = `{"channel":"webhook","to":"https://h.example.com","body":"b","data":{"x":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
        await post(body);
      }),
      { numRuns: Math.min(RUNS, 40) },
    );
    // Just under the 64 KiB limits it is a valid notification; above them a 413 (body) or 422 (content).
    const under = await post(
      JSON.stringify({ channel: 'webhook', to: 'https://h.example.com', body: `${MARKER}${'y'.repeat(64 * 1024 - 200)}` }),
    );
    expect(under.status).toBe(202);
    for (const size of [64 * 1024 + 1, 1024 * 1024, 8 * 1024 * 1024]) {
      const res = await post(JSON.stringify({ channel: 'webhook', to: 'https://h.example.com', body: `${MARKER}${'y'.repeat(size)}` }));
      expect([413, 422]).toContain(res.status);
    }
  });
});

describe('header abuse', () => {
  // Header values must be ByteStrings in fetch; latin1 covers every byte a client could send.
  const latin1 = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)), maxLength: 600 });
  it('random Authorization, Content-Type, Idempotency-Key, traceparent and X-Request-Id values', async () => {
    const headerSet = fc.record(
      {
        authorization: fc.oneof(
          latin1,
          latin1.map((s) => `Bearer ${s}`),
          fc.constant(`Bearer ${'A'.repeat(10_000)}`),
          fc.constant('bearer   '),
          fc.constant(`Basic ${Buffer.from('a:b').toString('base64')}`),
        ),
        'content-type': fc.oneof(latin1, fc.constant('application/json')),
        'idempotency-key': fc.oneof(latin1, fc.constant('k'.repeat(300))),
        traceparent: fc.oneof(
          latin1,
          fc.constant('00-00000000000000000000000000000000-0000000000000000-00'),
          fc.constant('ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'),
        ),
        'x-request-id': latin1,
        'content-length': fc.constantFrom('0', '1', '-1', '99999999999', 'abc'),
      },
      { requiredKeys: [] },
    );
    await fc.assert(
      fc.asyncProperty(headerSet, fc.boolean(), async (headers, validAuth) => {
        const h: Record<string, string> = { ...headers };
        if (validAuth) h.authorization = auth().authorization;
        await send('POST', '/v1/notifications', {
          headers: h,
          body: JSON.stringify({ channel: 'webhook', to: 'https://h.example.com', body: `b ${MARKER}` }),
        });
      }),
      { numRuns: RUNS },
    );
  });

  it('random paths, ids and query strings on every route', async () => {
    const segment = fc.oneof(
      fc.string({ maxLength: 60 }).map(encodeURIComponent),
      fc.constantFrom('ntf_', 'ntf_01J00000000000000000000000', '%00', '%ff%fe', '..%2f..%2f', '%', '%zz', ';', 'ntf_' + 'Z'.repeat(500)),
    );
    const query = fc.dictionary(fc.constantFrom('state', 'to', 'limit', 'cursor', 'x', 'limit[]'), fc.string({ maxLength: 40 }), {
      maxKeys: 4,
    });
    const route = fc.constantFrom('', '/attempts', '/actions', '/cancel', '/retry');
    await fc.assert(
      fc.asyncProperty(segment, route, query, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'), async (id, sub, q, method) => {
        const qs = new URLSearchParams(q).toString();
        await send(method, `/v1/notifications/${id}${sub}${qs ? `?${qs}` : ''}`, { headers: auth() });
        await send('GET', `/v1/notifications${qs ? `?${qs}` : ''}`, { headers: auth() });
      }),
      { numRuns: RUNS },
    );
  });
});

describe('after the fuzzing', () => {
  it('the database holds exactly the notifications the API accepted, and their outbox rows; nothing else', async () => {
    const { rows } = await t.pool.query<{ id: string }>('SELECT id FROM notifications');
    expect(new Set(rows.map((r) => r.id))).toEqual(accepted);
    const { rows: outbox } = await t.pool.query<{ id: string | null }>("SELECT DISTINCT (value::jsonb)->>'id' AS id FROM outbox");
    for (const r of outbox) expect(accepted.has(r.id ?? ''), `outbox row for ${r.id}`).toBe(true);
    const { rows: actions } = await t.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM notification_actions');
    expect(actions[0]!.n).toBe(0);
  });

  it('no log line carries the API key or content planted in a request', () => {
    const all = logLines.join('');
    expect(logLines.length).toBeGreaterThan(0);
    expect(all.includes(key.key)).toBe(false);
    expect(all.includes(MARKER)).toBe(false);
    // For the report: how the answers were spread.
    console.info(`api fuzz: ${RUNS} runs per property; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}`);
  });
});
