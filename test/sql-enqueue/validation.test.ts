/**
 * Property-based (fast-check): PostgreSQL's intent validation (`notify_intent_check`, which
 * `notify_enqueue` and `enqueue()` run) accepts exactly what the TypeScript validator it replaced
 * accepts (reference-intent.ts, the oracle), with the same error code, the same issue paths and
 * the same issue messages. And the fast path (`notify_intent_suspect`) never waves through an
 * intent that the definition (`notify_intent_issues`) refuses.
 *
 * FUZZ_RUNS sets the runs per property (default 300). A failure prints fast-check's seed and path.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildOpenApiDocument } from '@notify/api';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { NOW, intentArbitrary, webhookUrlArbitrary } from './arbitraries.js';
import { IntentFields, type FieldIssue, type Refusal, checkIntent, isRefusal } from './reference-intent.js';
import { z } from './zod.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.close();
});

interface SqlRefusal {
  readonly code: Refusal['code'];
  readonly message: string;
  readonly errors: readonly FieldIssue[];
}

const tally = { accepted: 0, refused: new Map<string, number>(), fastPath: 0 };

/** What PostgreSQL says about `intent` at NOW, and whether its fast path cleared it. */
async function sqlCheck(intent: unknown): Promise<{ refusal: SqlRefusal | null; suspect: boolean; issues: FieldIssue[] }> {
  const { rows } = await t.pool.query<{ refusal: SqlRefusal | null; suspect: boolean; issues: FieldIssue[] }>(
    'SELECT notify_intent_check($1::jsonb, $2) AS refusal, notify_intent_suspect($1::jsonb) AS suspect, notify_intent_issues($1::jsonb) AS issues',
    [JSON.stringify(intent), NOW],
  );
  return rows[0]!;
}

/** `'leaf'` inside `depth` arrays. */
function nestedArrays(depth: number): unknown {
  let v: unknown = 'leaf';
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

const sorted = (issues: readonly FieldIssue[]) => [...issues].map((i) => `${i.path} → ${i.message}`).sort();

/** Checks one intent against the oracle. */
async function agrees(generated: unknown): Promise<void> {
  // Both sides see the JSON (undefined dropped, -0 written as 0), as PostgreSQL does.
  const intent: unknown = JSON.parse(JSON.stringify(generated));
  const expected = checkIntent(intent, NOW);
  const { refusal, suspect, issues } = await sqlCheck(intent);
  const context = JSON.stringify(intent).slice(0, 600);
  if (!suspect) {
    tally.fastPath += 1;
    expect(issues, `fast path cleared an intent with issues: ${context}`).toEqual([]);
  }
  if (!isRefusal(expected)) {
    tally.accepted += 1;
    expect(refusal, context).toBeNull();
    return;
  }
  tally.refused.set(expected.code, (tally.refused.get(expected.code) ?? 0) + 1);
  expect(refusal, context).not.toBeNull();
  expect(refusal!.code, context).toBe(expected.code);
  expect(sorted(refusal!.errors), context).toEqual(sorted(expected.issues));
  // validation_failed lists its issues in the message, whose order is not part of the contract.
  if (expected.code !== 'validation_failed') expect(refusal!.message, context).toBe(expected.message);
}

describe('notify_intent_check agrees with the TypeScript validator it replaced', () => {
  it('on generated intents: valid ones and near-misses of every rule', { timeout: 60_000 + RUNS * 20 }, async () => {
    await fc.assert(fc.asyncProperty(intentArbitrary, agrees), { numRuns: RUNS });
  });

  it('on JSON values that are not objects', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.jsonValue({ maxDepth: 2 }).filter((v) => typeof v !== 'object' || v === null || Array.isArray(v)),
        agrees,
      ),
      {
        numRuns: Math.min(RUNS, 100),
      },
    );
  });

  it('on the cases the API tests and the former unit tests pinned', async () => {
    const base = { tenant_id: 't1', channel: 'email', to: 'ada@example.com', body: 'Welcome' };
    const webhook = { tenant_id: 't1', channel: 'webhook', to: 'https://hooks.example.com/in', body: '{"hello":1}' };
    for (const intent of [
      base,
      { ...base, channel: 'pager' },
      { ...base, to: 'not-an-address' },
      { ...base, body: undefined },
      { ...base, template: 'welcome' },
      { ...base, body: 'x'.repeat(70_000) },
      { ...base, expires_at: '2026-05-01T11:00:00Z' },
      { ...base, expires_at: '2026-05-02T11:00:00Z', ttl_seconds: 5 },
      { ...base, tenant_id: '' },
      { ...base, extra: 1 },
      { ...base, channel: 'sms', to: '12', subject: 'hi' },
      { tenant_id: 't1', body: 'x' },
      { ...webhook, recipient: 'x', tenant: 'globex' },
      { ...webhook, to: 'not a url', template: 'welcome' },
      { ...webhook, to: 'ftp://example.com' },
      { ...webhook, to: 'https://user:pw@example.com' },
      { ...webhook, expires_at: '2020-01-01T00:00:00Z' },
      { ...webhook, body: `M${'y'.repeat(64 * 1024 - 200)}` },
      { ...webhook, data: { ok: nestedArrays(30) }, body: 'paired 😀 surrogates are fine' },
      { ...webhook, data: { ok: nestedArrays(31) } },
      { ...webhook, data: { ok: nestedArrays(32) } },
    ]) {
      await agrees(intent);
    }
    // A few answers spelled out, so a change to both sides at once is still noticed.
    expect((await sqlCheck({ ...base, channel: 'pager' })).refusal).toEqual({
      code: 'unknown_channel',
      message: 'unknown channel "pager"; expected one of email, sms, webhook',
      errors: [{ path: 'channel', message: 'must be one of email, sms, webhook' }],
    });
    expect((await sqlCheck({ tenant_id: 't1', body: 'x' })).refusal).toMatchObject({
      code: 'validation_failed',
      errors: [
        { path: 'channel', message: 'Invalid input: expected string, received undefined' },
        { path: 'to', message: 'Invalid input: expected string, received undefined' },
      ],
    });
    expect((await sqlCheck({ ...base, body: 'x'.repeat(70_000) })).refusal).toMatchObject({
      code: 'payload_too_large',
      message: 'the notification content is 70000 bytes; at most 65536 are allowed',
    });
  });

  it('the webhook fast path (migration 0160) clears only URLs the full parse accepts', { timeout: 60_000 + RUNS * 20 }, async () => {
    let cleared = 0;
    const check = async (url: unknown) => {
      const { rows } = await t.pool.query<{ plain: boolean | null; problem: string | null }>(
        `SELECT octet_length($1) <= 2048 AND $1 ~ notify_webhook_url_plain() AS plain, notify_webhook_url_problem($1) AS problem`,
        [typeof url === 'string' ? url : JSON.stringify(url)],
      );
      const { plain, problem } = rows[0]!;
      if (plain) {
        cleared += 1;
        expect(problem, `fast path cleared ${JSON.stringify(url)}`).toBeNull();
      }
    };
    await fc.assert(fc.asyncProperty(webhookUrlArbitrary, check), { numRuns: RUNS });
    // The edges of the pattern, each next to a near-miss the full parse refuses or decides itself.
    for (const url of [
      'http://127.0.0.1:9/hook',
      'https://255.255.255.255',
      'https://256.1.1.1/x',
      'https://01.2.3.4/',
      'https://1.2.3.4.5/',
      'https://a.b.c/x',
      'https://example.123/',
      'https://example.com.:8080?q',
      'https://localhost:99999/',
      'https://localhost:65535/',
      'https://localhost:65536/',
      'https://localhost:10000/',
      'https://localhost:09999/',
      'https://exa_mple.com/',
      'https://user@example.com/',
      'http://example.com#frag',
      'HTTP://example.com/',
      ' https://example.com/',
      `https://example.com/${'x'.repeat(2048)}`,
    ]) {
      await check(url);
    }
    expect(cleared).toBeGreaterThan(0);
  });

  it('reports how the generated intents were spread', () => {
    console.info(
      `sql-enqueue validation: accepted ${tally.accepted}, refused ${JSON.stringify(Object.fromEntries(tally.refused))}, fast path ${tally.fastPath}`,
    );
    expect(tally.accepted).toBeGreaterThan(0);
    expect(tally.fastPath).toBeGreaterThan(0);
    expect([...tally.refused.keys()].sort()).toEqual(['bad_expiry', 'payload_too_large', 'unknown_channel', 'validation_failed']);
  });
});

describe('the API documents these rules', () => {
  it('the OpenAPI NotificationRequest has the oracle’s fields and bounds (so it matches what PostgreSQL accepts)', () => {
    const doc = buildOpenApiDocument() as {
      components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> };
    };
    const published = doc.components.schemas.NotificationRequest!;
    const oracle = z.toJSONSchema(IntentFields, { io: 'input', target: 'draft-2020-12' }) as {
      properties: Record<string, unknown>;
      required?: string[];
    };
    // The delivery options (migration 0040: send_at, priority, ordering) came after the oracle;
    // notify_item_check validates them and packages/outbox/test/enqueue-many.test.ts tests them.
    const { send_at: _s, priority: _p, ordering: _o, ...beforeOptions } = published.properties;
    expect(beforeOptions).toEqual(oracle.properties);
    expect(published.required).toEqual(oracle.required);
  });
});
