import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Channel, StatusEventType } from './enums.js';
import { ISO_INSTANT, isIsoInstant } from './iso-instant.js';
import { contractJsonSchemas } from './json-schemas.js';
import type { DeliveryRequestV1, ParseResult } from './messages.js';
import { parseDeliveryRequest, parseStatusEvent } from './parse.js';

const request = {
  v: 1,
  type: 'notification.deliver',
  id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  tenant_id: 'acme',
  channel: 'email',
  attempt: 2,
  due_at: '2026-05-01T12:00:00.000Z',
};
const event = {
  v: 1,
  type: 'notification.dead',
  id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  tenant_id: 'acme',
  channel: 'email',
  state: 'dead',
  attempts: 4,
  dead_reason: 'exhausted',
  last_error: 'provider returned 503',
  next_attempt_at: null,
  occurred_at: '2026-05-01T12:00:00.000Z',
};
const text = (o: object) => JSON.stringify(o);
const without = (o: Record<string, unknown>, key: string) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));

describe('parse failures: the reasons the dispatcher puts in dlq-reason', () => {
  // These texts are stable: operators grep for them and the dispatcher maps their prefixes to codes.
  it.each([
    [null, 'empty message (tombstone)'],
    [undefined, 'empty message (tombstone)'],
    ['{not json', 'value is not valid JSON'],
    [Buffer.from([0xff, 0xfe, 0x00]), 'value is not valid JSON'],
    ['', 'value is not valid JSON'],
    ['[1,2]', 'no schema version field "v"'],
    ['"v"', 'no schema version field "v"'],
    ['null', 'no schema version field "v"'],
    ['{"type":"notification.deliver"}', 'no schema version field "v"'],
    ['{"v":2,"type":"notification.deliver"}', 'unknown schema version 2'],
    ['{"v":"1"}', 'unknown schema version "1"'],
    ['{"v":null}', 'unknown schema version null'],
  ])('%s → %s', (value, reason) => {
    expect(parseDeliveryRequest(value)).toEqual({ ok: false, reason });
    expect(parseStatusEvent(value)).toEqual({ ok: false, reason });
  });

  it.each([
    [{ ...request, channel: 'pager' }, 'channel: Invalid option: expected one of "email"|"sms"|"webhook"'],
    [{ ...request, type: 'notification.sent' }, 'type: Invalid input: expected "notification.deliver"'],
    [without(request, 'id'), 'id: Invalid input: expected string, received undefined'],
    [{ ...request, id: '' }, 'id: Too small: expected string to have >=1 characters'],
    [{ ...request, id: 'x'.repeat(65) }, 'id: Too big: expected string to have <=64 characters'],
    [{ ...request, tenant_id: 't'.repeat(201) }, 'tenant_id: Too big: expected string to have <=200 characters'],
    [{ ...request, tenant_id: 7 }, 'tenant_id: Invalid input: expected string, received number'],
    [{ ...request, attempt: 0 }, 'attempt: Too small: expected number to be >=1'],
    [{ ...request, attempt: 1.5 }, 'attempt: Invalid input: expected int, received number'],
    [{ ...request, attempt: '2' }, 'attempt: Invalid input: expected number, received string'],
    [{ ...request, attempt: [2] }, 'attempt: Invalid input: expected number, received array'],
    [{ ...request, attempt: 2 ** 53 }, 'attempt: Too big: expected int to be <=9007199254740991'],
    [{ ...request, due_at: '2026-05-01T12:00:00' }, 'due_at: Invalid ISO datetime'],
    [{ ...request, due_at: null }, 'due_at: Invalid input: expected string, received null'],
    [{ ...request, recipient: 'ada@example.com' }, '(root): Unrecognized key: "recipient"'],
    [{ ...request, a: 1, b: 2 }, '(root): Unrecognized keys: "a", "b"'],
    // The first problem in wire order wins, and field problems come before unknown keys.
    [{ ...request, extra: 1, attempt: 0, id: '' }, 'id: Too small: expected string to have >=1 characters'],
  ])('delivery request %j → %s', (message, problem) => {
    expect(parseDeliveryRequest(text(message))).toEqual({ ok: false, reason: `invalid message: ${problem}` });
  });

  it.each([
    [
      { ...event, type: 'notification.deliver' },
      'type: Invalid option: expected one of "notification.queued"|"notification.retry_scheduled"|"notification.sent"|"notification.dead"|"notification.cancelled"|"notification.requeued"',
    ],
    [{ ...event, state: 'lost' }, 'state: Invalid option: expected one of "queued"|"sent"|"dead"|"cancelled"'],
    [{ ...event, attempts: -1 }, 'attempts: Too small: expected number to be >=0'],
    [{ ...event, attempts: -1e300 }, 'attempts: Too small: expected int to be >=-9007199254740991'],
    [
      { ...event, dead_reason: 'bored' },
      'dead_reason: Invalid option: expected one of "permanent"|"exhausted"|"expired"|"suppressed"|"publish_failed"',
    ],
    [
      without(event, 'dead_reason'),
      'dead_reason: Invalid option: expected one of "permanent"|"exhausted"|"expired"|"suppressed"|"publish_failed"',
    ],
    [without(event, 'last_error'), 'last_error: Invalid input: expected string, received undefined'],
    [{ ...event, last_error: { code: 503 } }, 'last_error: Invalid input: expected string, received object'],
    [{ ...event, next_attempt_at: '2026-02-29T00:00:00Z' }, 'next_attempt_at: Invalid ISO datetime'],
    [{ ...event, occurred_at: true }, 'occurred_at: Invalid input: expected string, received boolean'],
  ])('status event %j → %s', (message, problem) => {
    expect(parseStatusEvent(text(message))).toEqual({ ok: false, reason: `invalid message: ${problem}` });
  });

  it('never throws, even on nesting too deep for JSON.stringify', () => {
    const deep = `{"v":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect(parseDeliveryRequest(deep)).toEqual({ ok: false, reason: 'unknown schema version (array nested too deeply to print)' });
    const deepField = `{"v":1,"type":"notification.deliver","id":${'['.repeat(200_000)}${']'.repeat(200_000)}}`;
    expect(parseDeliveryRequest(deepField)).toEqual({
      ok: false,
      reason: 'invalid message: id: Invalid input: expected string, received array',
    });
  });

  it('a status event is not a delivery request, and the other way round', () => {
    expect(parseDeliveryRequest(text(event))).toMatchObject({ ok: false, reason: expect.stringMatching(/^invalid message: type: /) });
    expect(parseStatusEvent(text(request))).toMatchObject({ ok: false, reason: expect.stringMatching(/^invalid message: type: /) });
  });
});

describe('parse successes', () => {
  it('reads bytes and text alike, and returns only the contract fields in wire order', () => {
    const shuffled =
      '{"due_at":"2026-05-01T12:00:00.000+02:00","attempt":1,"channel":"sms","tenant_id":"t","id":"i","type":"notification.deliver","v":1}';
    const fromText = parseDeliveryRequest(shuffled);
    expect(fromText).toEqual(parseDeliveryRequest(Buffer.from(shuffled)));
    expect(fromText.ok && Object.keys(fromText.message)).toEqual(['v', 'type', 'id', 'tenant_id', 'channel', 'attempt', 'due_at']);
  });
  it('nullables accept null', () => {
    const queued = {
      ...event,
      type: 'notification.queued',
      state: 'queued',
      attempts: 0,
      dead_reason: null,
      last_error: null,
      next_attempt_at: '2026-05-01T12:00:00Z',
    };
    expect(parseStatusEvent(text(queued))).toEqual({ ok: true, message: queued });
  });
  it('counts lengths in code points, as JSON Schema does (and zod did)', () => {
    const emoji = '\u{1F600}';
    expect(parseDeliveryRequest(text({ ...request, id: emoji.repeat(64) })).ok).toBe(true);
    expect(parseDeliveryRequest(text({ ...request, id: emoji.repeat(65) }))).toEqual({
      ok: false,
      reason: 'invalid message: id: Too big: expected string to have <=64 characters',
    });
    expect(parseDeliveryRequest(text({ ...request, id: '\ud800'.repeat(64) })).ok).toBe(true);
    expect(parseDeliveryRequest(text({ ...request, id: '\ud800'.repeat(65) })).ok).toBe(false);
  });
  it('the largest exact integer is a valid attempt', () => {
    expect(parseDeliveryRequest(text({ ...request, attempt: Number.MAX_SAFE_INTEGER })).ok).toBe(true);
  });
  it('narrows to the message type', () => {
    const result = parseDeliveryRequest(text(request));
    expectTypeOf(result).toEqualTypeOf<ParseResult<DeliveryRequestV1>>();
    if (result.ok) {
      expectTypeOf(result.message.channel).toEqualTypeOf<Channel>();
      expectTypeOf<StatusEventType>().toEqualTypeOf<
        | 'notification.queued'
        | 'notification.retry_scheduled'
        | 'notification.sent'
        | 'notification.dead'
        | 'notification.cancelled'
        | 'notification.requeued'
      >();
    } else {
      expectTypeOf(result.reason).toBeString();
    }
  });
});

describe('isIsoInstant: what z.iso.datetime({ offset: true }) accepted', () => {
  it.each([
    '2026-05-01T12:00:00Z',
    '2026-05-01T12:00:00.000Z',
    '2026-05-01T12:00:00.123456789012Z',
    '2026-05-01T23:59:59+23:59',
    '2026-05-01T00:00:00-00:00',
    '2000-02-29T00:00:00Z',
    '2024-02-29T00:00:00Z',
    '0000-02-29T00:00:00Z',
    '9999-12-31T23:59:59Z',
  ])('accepts %s', (s) => expect(isIsoInstant(s)).toBe(true));
  it.each([
    '2026-05-01T12:00:00',
    '2026-05-01T12:00Z',
    '2026-05-01t12:00:00z',
    '2026-05-01 12:00:00Z',
    '2026-05-01T12:00:00.Z',
    '2026-05-01T24:00:00Z',
    '2026-05-01T12:60:00Z',
    '2026-05-01T23:59:60Z',
    '2026-05-01T12:00:00+02',
    '2026-05-01T12:00:00+0200',
    '2026-05-01T12:00:00+24:00',
    '2026-13-01T12:00:00Z',
    '2026-04-31T12:00:00Z',
    '1900-02-29T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '+012026-05-01T12:00:00Z',
    '2026-05-01T12:00:00Z\n',
    '２026-05-01T12:00:00Z',
  ])('rejects %j', (s) => expect(isIsoInstant(s)).toBe(false));
  it('is the pattern of every date-time in the JSON Schemas', () => {
    const patterns: unknown[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (typeof node === 'object' && node !== null) {
        const n = node as Record<string, unknown>;
        if (n.format === 'date-time') patterns.push(n.pattern);
        Object.values(n).forEach(walk);
      }
    };
    walk(contractJsonSchemas());
    expect(patterns).toHaveLength(4); // due_at, next_attempt_at, occurred_at, the due-at header
    for (const pattern of patterns) expect(pattern).toBe(ISO_INSTANT.source);
  });
});
