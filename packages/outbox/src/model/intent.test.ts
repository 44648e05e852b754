import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { type NotificationIntent, recipientProblem, validateIntent } from './intent.js';

const now = new Date('2026-05-01T12:00:00Z');
const base: NotificationIntent = { tenant_id: 't1', channel: 'email', to: 'ada@example.com', body: 'Welcome' };

function codeOf(intent: NotificationIntent): string | undefined {
  try {
    validateIntent(intent, now);
    return undefined;
  } catch (err) {
    expect(err).toBeInstanceOf(ValidationError);
    return (err as ValidationError).code;
  }
}

describe('validateIntent', () => {
  it('accepts a minimal email intent', () => {
    expect(validateIntent(base, now)).toMatchObject({ channel: 'email', to: 'ada@example.com', body: 'Welcome' });
  });
  it('names the error kind by code', () => {
    expect(codeOf({ ...base, channel: 'pager' })).toBe('unknown_channel');
    expect(codeOf({ ...base, to: 'not-an-address' })).toBe('validation_failed');
    expect(codeOf({ ...base, body: undefined })).toBe('validation_failed');
    expect(codeOf({ ...base, template: 'welcome' })).toBe('validation_failed');
    expect(codeOf({ ...base, body: 'x'.repeat(70_000) })).toBe('payload_too_large');
    expect(codeOf({ ...base, expires_at: '2026-05-01T11:00:00Z' })).toBe('bad_expiry');
    expect(codeOf({ ...base, expires_at: '2026-05-02T11:00:00Z', ttl_seconds: 5 })).toBe('bad_expiry');
    expect(codeOf({ ...base, tenant_id: '' })).toBe('validation_failed');
    expect(codeOf({ ...base, extra: 1 } as NotificationIntent)).toBe('validation_failed');
  });
  it('lists every field issue', () => {
    try {
      validateIntent({ ...base, channel: 'sms', to: '12', subject: 'hi' }, now);
      expect.unreachable();
    } catch (err) {
      expect((err as ValidationError).issues.map((i) => i.path).sort()).toEqual(['subject', 'to']);
    }
  });
  it('refuses what PostgreSQL cannot store: U+0000, lone surrogates, very deep data', () => {
    const issue = (i: NotificationIntent) => {
      try {
        validateIntent(i, now);
        return undefined;
      } catch (err) {
        return (err as ValidationError).issues[0];
      }
    };
    expect(issue({ ...base, body: 'a\u0000b' })).toEqual({ path: 'body', message: expect.stringContaining('U+0000') });
    expect(issue({ ...base, subject: 'x\uD800' })).toMatchObject({ path: 'subject' });
    expect(issue({ ...base, data: { ['k\u0000']: 1 } })).toMatchObject({ path: 'data.k\u0000' });
    expect(issue({ ...base, metadata: { a: '\uDC00' } })).toMatchObject({ path: 'metadata.a' });
    let deep: unknown = 'leaf';
    for (let i = 0; i < 5000; i++) deep = { d: deep };
    expect(issue({ ...base, data: deep as Record<string, unknown> })).toMatchObject({ message: expect.stringContaining('32 levels') });
    let ok: unknown = 'leaf';
    for (let i = 0; i < 30; i++) ok = [ok];
    expect(issue({ ...base, data: { ok }, body: 'paired 😀 surrogates are fine' })).toBeUndefined();
  });

  it('keeps a well-formed traceparent and drops a malformed one', () => {
    const tp = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(validateIntent({ ...base, traceparent: tp }, now).traceparent).toBe(tp);
    expect(validateIntent({ ...base, traceparent: 'junk' }, now).traceparent).toBeUndefined();
  });
});

describe('recipientProblem', () => {
  it.each([
    ['email', 'a@b.co', null],
    ['email', 'a@b', 'must be an email address'],
    ['sms', '+14155550100', null],
    ['sms', '4155550100', expect.stringContaining('E.164')],
    ['webhook', 'https://example.com/hook', null],
    ['webhook', 'ftp://example.com', 'must use http or https'],
    ['webhook', 'https://user:pw@example.com', 'must not carry credentials'],
    ['webhook', 'not a url', expect.stringContaining('absolute')],
  ] as const)('%s %s', (channel, to, expected) => {
    expect(recipientProblem(channel, to)).toEqual(expected);
  });
});
