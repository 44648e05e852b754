import { readdirSync } from 'node:fs';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { buildDeliveryRequest, buildStatusEvent, type MessageSubject, type StatusEventFields } from './builders.js';
import { CHANNELS, DEAD_REASONS, NOTIFICATION_STATES, STATUS_EVENT_TYPES } from './enums.js';
import { isIsoInstant } from './iso-instant.js';
import { CONTRACT_SCHEMA_NAMES, contractJsonSchemas } from './json-schemas.js';
import type { ParseResult } from './messages.js';
import { parseDeliveryRequest, parseStatusEvent } from './parse.js';
import { serializeDeliveryRequest, serializeStatusEvent } from './serialize.js';

// The hand-written parser and the shipped JSON Schemas must accept exactly the same values: other
// teams validate with the schemas, the dispatcher with the parser.

const schemas = contractJsonSchemas();
const ajv = new Ajv2020({ strict: true });
addFormats.default(ajv);
for (const schema of Object.values(schemas)) ajv.addSchema(schema);
const validator = (name: string): ValidateFunction => {
  const validate = ajv.getSchema(`https://notify.dev/schemas/${name}.json`);
  if (!validate) throw new Error(`no schema ${name}`);
  return validate as ValidateFunction;
};
const validateRequest = validator('delivery-request.v1');
const validateEvent = validator('status-event.v1');
const validateRequestHeaders = validator('delivery-request-headers.v1');
const validateEventHeaders = validator('status-event-headers.v1');
const validateInstant = ajv.compile((schemas['delivery-request.v1'].properties as Record<string, object>).due_at!);

// One code point per unit (no lone surrogates), so `maxLength` counts what JSON Schema counts.
const codePoint = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('a', 'Z', '0', '_', '-', '/', ' ', '"', '\\') },
  fc.integer({ min: 0x80, max: 0xd7ff }).map((c) => String.fromCodePoint(c)),
  fc.integer({ min: 0x10000, max: 0x10ffff }).map((c) => String.fromCodePoint(c)),
);
/** min to max code points, often exactly max. */
const text = (min: number, max: number) =>
  fc.oneof(fc.string({ unit: codePoint, minLength: min, maxLength: max }), fc.string({ unit: codePoint, minLength: max, maxLength: max }));
const twoDigits = (min: number, max: number) => fc.integer({ min, max }).map((n) => String(n).padStart(2, '0'));
const instant = fc
  .tuple(
    fc.date({ min: new Date('0000-01-01T00:00:00.000Z'), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }),
    fc.option(fc.stringMatching(/^[0-9]{1,12}$/)),
    fc.oneof(
      fc.constant('Z'),
      fc.tuple(fc.constantFrom('+', '-'), twoDigits(0, 23), twoDigits(0, 59)).map(([sign, h, m]) => `${sign}${h}:${m}`),
    ),
  )
  .map(([date, fraction, offset]) => `${date.toISOString().slice(0, 19)}${fraction === null ? '' : `.${fraction}`}${offset}`);
/** Strings that look like instants: valid ones, each part just inside or outside its range, one-character edits. */
const instantLike = fc.oneof(
  instant,
  fc
    .tuple(
      fc.integer({ min: 0, max: 9999 }).map((y) => String(y).padStart(4, '0')),
      twoDigits(0, 13),
      twoDigits(0, 32),
      twoDigits(0, 24),
      twoDigits(0, 60),
      twoDigits(0, 60),
      fc.constantFrom('', '.', '.5', '.000'),
      fc.constantFrom('Z', 'z', '', '+00:00', '-23:59', '+24:00', '+00:60', '+0000', '+00', '-5:00'),
    )
    .map(([y, mo, d, h, mi, s, fraction, offset]) => `${y}-${mo}-${d}T${h}:${mi}:${s}${fraction}${offset}`),
  fc
    .tuple(instant, fc.nat(), fc.boolean(), fc.constantFrom('', '0', '9', '-', ':', 'T', 't', 'Z', 'z', '.', '+', ' ', '\n', 'x', '٣'))
    .map(([s, i, insert, c]) => {
      const at = i % (s.length + 1);
      return s.slice(0, at) + c + s.slice(insert ? at : at + 1);
    }),
);

const validRequest = fc.record({
  v: fc.constant(1),
  type: fc.constant('notification.deliver'),
  id: text(1, 64),
  tenant_id: text(1, 200),
  channel: fc.constantFrom(...CHANNELS),
  attempt: fc.oneof(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })),
  due_at: instant,
});
const validEvent = fc.record({
  v: fc.constant(1),
  type: fc.constantFrom(...STATUS_EVENT_TYPES),
  id: text(1, 64),
  tenant_id: text(1, 200),
  channel: fc.constantFrom(...CHANNELS),
  state: fc.constantFrom(...NOTIFICATION_STATES),
  attempts: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER })),
  dead_reason: fc.option(fc.constantFrom(...DEAD_REASONS)),
  last_error: fc.option(fc.string({ unit: codePoint, maxLength: 40 })),
  next_attempt_at: fc.option(instant),
  occurred_at: instant,
});

/** Values that break some field: wrong types, near-miss enums and dates, out-of-range numbers and lengths. */
const replacement = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(null, true, '', 0, -1, 0.5, 1.5, -0.5, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 1e300, -1e300, 1e-7, '1', [1], {}),
  fc.constantFrom(
    ...CHANNELS,
    ...NOTIFICATION_STATES,
    ...DEAD_REASONS,
    ...STATUS_EVENT_TYPES,
    'notification.deliver',
    'pager',
    'Email',
    'sent ',
  ),
  instantLike,
  text(64, 66),
  text(199, 202),
);
/** The fields of both kinds of message: a field of the other kind is an unknown key. */
const FIELD_NAMES = [
  'v',
  'type',
  'id',
  'tenant_id',
  'channel',
  'attempt',
  'due_at',
  'state',
  'attempts',
  'dead_reason',
  'last_error',
  'next_attempt_at',
  'occurred_at',
];
type Mutation = { op: 'drop'; field: string } | { op: 'set'; field: string; value: unknown };
const mutation = (fields: readonly string[]): fc.Arbitrary<Mutation> =>
  fc.oneof(
    fc.record({ op: fc.constant('drop' as const), field: fc.constantFrom(...fields) }),
    { weight: 3, arbitrary: fc.record({ op: fc.constant('set' as const), field: fc.constantFrom(...fields), value: replacement }) },
    fc.record({
      op: fc.constant('set' as const),
      field: fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('recipient', '__proto__', 'V', 'id ', 'constructor')),
      value: fc.jsonValue({ maxDepth: 1 }),
    }),
  );
function mutate(message: Record<string, unknown>, mutations: readonly Mutation[]): Record<string, unknown> {
  const copy = { ...message };
  for (const m of mutations) {
    if (m.op === 'drop') delete copy[m.field];
    // defineProperty, so that "__proto__" becomes a key like any other (as JSON.parse makes it).
    else Object.defineProperty(copy, m.field, { value: m.value, enumerable: true, writable: true, configurable: true });
  }
  return copy;
}
/** JSON text: a valid message, the same after one to three mutations, or any JSON at all. */
const candidates = (valid: fc.Arbitrary<Record<string, unknown>>) =>
  fc.oneof(
    { weight: 2, arbitrary: valid.map((m) => JSON.stringify(m)) },
    {
      weight: 6,
      arbitrary: fc
        .tuple(valid, fc.array(mutation(FIELD_NAMES), { minLength: 1, maxLength: 3 }))
        .map(([m, ms]) => JSON.stringify(mutate(m, ms))),
    },
    { weight: 1, arbitrary: fc.jsonValue().map((v) => JSON.stringify(v) ?? 'null') },
  );

function agree(parse: (value: string) => ParseResult<unknown>, validate: ValidateFunction, arbitrary: fc.Arbitrary<string>) {
  const seen = { accepted: 0, rejected: 0 };
  fc.assert(
    fc.property(arbitrary, (json) => {
      const parsed = parse(json);
      const valid = validate(JSON.parse(json));
      if (parsed.ok !== valid) {
        throw new Error(
          `disagree on ${json}: parser ${parsed.ok ? 'accepts' : `rejects (${parsed.reason})`}, schema ${valid ? 'accepts' : `rejects (${ajv.errorsText(validate.errors)})`}`,
        );
      }
      seen[valid ? 'accepted' : 'rejected']++;
    }),
    { numRuns: 3000 },
  );
  // Both sides of the boundary were exercised, not just one.
  expect(seen.accepted).toBeGreaterThan(300);
  expect(seen.rejected).toBeGreaterThan(1000);
}

describe('the parser and the JSON Schemas agree', () => {
  it('on delivery requests and their mutations', () => {
    agree(parseDeliveryRequest, validateRequest, candidates(validRequest));
  });
  it('on status events and their mutations', () => {
    agree(parseStatusEvent, validateEvent, candidates(validEvent));
  });
  it('on instants (the schema: format date-time and the pattern)', () => {
    const seen = { accepted: 0, rejected: 0 };
    fc.assert(
      fc.property(instantLike, (s) => {
        const valid = validateInstant(s);
        expect(isIsoInstant(s), s).toBe(valid);
        seen[valid ? 'accepted' : 'rejected']++;
      }),
      { numRuns: 5000 },
    );
    expect(seen.accepted).toBeGreaterThan(500);
    expect(seen.rejected).toBeGreaterThan(500);
  });
});

describe('valid messages', () => {
  it('parse to themselves and serialize back to the same bytes', () => {
    fc.assert(
      fc.property(validRequest, validEvent, (request, event) => {
        const r = parseDeliveryRequest(JSON.stringify(request));
        const e = parseStatusEvent(JSON.stringify(event));
        expect(r).toEqual({ ok: true, message: request });
        expect(e).toEqual({ ok: true, message: event });
        if (r.ok) expect(serializeDeliveryRequest(r.message)).toBe(JSON.stringify(request));
        if (e.ok) expect(serializeStatusEvent(e.message)).toBe(JSON.stringify(event));
      }),
      { numRuns: 500 },
    );
  });
});

describe('builders', () => {
  const subject: fc.Arbitrary<MessageSubject> = fc.record({
    id: text(1, 64),
    tenant_id: text(1, 200),
    channel: fc.constantFrom(...CHANNELS),
    recipient: fc.string({ unit: codePoint }),
    traceparent: fc.oneof(fc.constantFrom(null, undefined, ''), fc.stringMatching(/^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/)),
  });
  const date = fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2999-12-31T23:59:59.999Z'), noInvalidDate: true });
  const fields: fc.Arbitrary<StatusEventFields> = fc.record({
    type: fc.constantFrom(...STATUS_EVENT_TYPES),
    state: fc.constantFrom(...NOTIFICATION_STATES),
    attempts: fc.nat(),
    dead_reason: fc.constantFrom(undefined, null, ...DEAD_REASONS),
    last_error: fc.option(fc.string(), { nil: undefined }),
    next_attempt_at: fc.option(date, { nil: undefined }),
    occurred_at: date,
  });

  it('produce values the schema accepts and headers the header schemas accept', () => {
    fc.assert(
      fc.property(subject, fc.integer({ min: 1, max: 1000 }), date, fields, (s, attempt, dueAt, f) => {
        const request = buildDeliveryRequest(s, attempt, dueAt);
        const event = buildStatusEvent(s, f);
        expect(validateRequest(JSON.parse(request.value)), ajv.errorsText(validateRequest.errors)).toBe(true);
        expect(validateEvent(JSON.parse(event.value)), ajv.errorsText(validateEvent.errors)).toBe(true);
        expect(validateRequestHeaders(request.headers), ajv.errorsText(validateRequestHeaders.errors)).toBe(true);
        expect(validateEventHeaders(event.headers), ajv.errorsText(validateEventHeaders.errors)).toBe(true);
        expect(parseDeliveryRequest(request.value).ok).toBe(true);
        expect(parseStatusEvent(event.value).ok).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('the shipped schema files', () => {
  it('are all listed, each with its own $id, in draft 2020-12', () => {
    const files = readdirSync(new URL('../schemas/', import.meta.url)).filter((f) => f.endsWith('.json'));
    expect(files.map((f) => f.slice(0, -'.json'.length)).sort()).toEqual([...CONTRACT_SCHEMA_NAMES].sort());
    for (const name of CONTRACT_SCHEMA_NAMES) {
      expect(schemas[name].$id).toBe(`https://notify.dev/schemas/${name}.json`);
      expect(schemas[name].$schema).toBe('https://json-schema.org/draft/2020-12/schema');
    }
  });
});
