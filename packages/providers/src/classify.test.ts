import { describe, expect, it } from 'vitest';
import { CLASSIFICATION, classifyCode, classifyErrno, errorCode, parseRetryAfter } from './classify.js';

describe('classifyCode', () => {
  it.each([
    [200, 'sent'],
    [202, 'sent'],
    [204, 'sent'],
    [301, 'permanent'],
    [302, 'permanent'],
    [307, 'permanent'],
    [400, 'permanent'],
    [401, 'permanent'],
    [404, 'permanent'],
    [408, 'transient'],
    [410, 'permanent'],
    [413, 'permanent'],
    [422, 'permanent'],
    [425, 'transient'],
    [429, 'transient'],
    [500, 'transient'],
    [502, 'transient'],
    [503, 'transient'],
    [504, 'transient'],
    [101, 'transient'],
    [999, 'transient'],
  ] as const)('webhook HTTP %i → %s', (status, verdict) => {
    expect(classifyCode('webhook', status)).toBe(verdict);
  });

  it.each([
    [201, 'sent'],
    [400, 'permanent'],
    [404, 'permanent'],
    [422, 'permanent'],
    [401, 'transient'],
    [403, 'transient'],
    [429, 'transient'],
    [500, 'transient'],
    [503, 'transient'],
  ] as const)('sms HTTP %i → %s', (status, verdict) => {
    expect(classifyCode('sms', status)).toBe(verdict);
  });

  it.each([
    [250, 'sent'],
    [421, 'transient'],
    [450, 'transient'],
    [451, 'transient'],
    [452, 'transient'],
    [550, 'permanent'],
    [551, 'permanent'],
    [552, 'permanent'],
    [553, 'permanent'],
    [554, 'permanent'],
    [535, 'transient'],
    [530, 'transient'],
    [354, 'transient'],
  ] as const)('email SMTP %i → %s', (code, verdict) => {
    expect(classifyCode('email', code)).toBe(verdict);
  });
});

describe('classifyErrno', () => {
  it('network failures are transient on every channel; unknown and missing codes too', () => {
    for (const channel of ['webhook', 'sms', 'email'] as const) {
      for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'EPIPE']) {
        expect(classifyErrno(channel, code)).toBe('transient');
      }
      expect(classifyErrno(channel, 'ESOMETHINGNEW')).toBe('transient');
      expect(classifyErrno(channel, undefined)).toBe('transient');
    }
  });
  it('a refused webhook target is permanent; nodemailer envelope and message errors are permanent', () => {
    expect(classifyErrno('webhook', 'ETARGETREFUSED')).toBe('permanent');
    expect(classifyErrno('email', 'EENVELOPE')).toBe('permanent');
    expect(classifyErrno('email', 'EMESSAGE')).toBe('permanent');
    expect(classifyErrno('email', 'EAUTH')).toBe('transient');
    expect(classifyErrno('email', 'ECONNECTION')).toBe('transient');
  });
  it('has one table per channel', () => {
    expect(Object.keys(CLASSIFICATION).sort()).toEqual(['email', 'sms', 'webhook']);
  });
});

describe('parseRetryAfter', () => {
  const now = new Date('2026-05-01T12:00:00Z');
  it('reads delay-seconds relative to the injected now', () => {
    expect(parseRetryAfter('120', now)).toEqual(new Date('2026-05-01T12:02:00Z'));
    expect(parseRetryAfter(' 5 ', now)).toEqual(new Date('2026-05-01T12:00:05Z'));
    expect(parseRetryAfter(['30', '60'], now)).toEqual(new Date('2026-05-01T12:00:30Z'));
  });
  it('reads an HTTP date', () => {
    expect(parseRetryAfter('Fri, 01 May 2026 12:10:00 GMT', now)).toEqual(new Date('2026-05-01T12:10:00Z'));
  });
  it('ignores absent, malformed, zero, past and absurd values', () => {
    for (const v of [
      undefined,
      null,
      '',
      'soon',
      '-5',
      '1.5',
      '0',
      'Fri, 01 May 2026 11:00:00 GMT',
      '99999999999',
      'Thu, 01 Jan 2099 00:00:00 GMT',
    ]) {
      expect(parseRetryAfter(v as string | undefined, now)).toBeUndefined();
    }
  });
});

describe('errorCode', () => {
  it('finds the code on the error or down its cause chain', () => {
    expect(errorCode(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe('ECONNRESET');
    expect(errorCode(new TypeError('fetch failed', { cause: Object.assign(new Error('y'), { code: 'ECONNREFUSED' }) }))).toBe(
      'ECONNREFUSED',
    );
    expect(errorCode(new Error('plain'))).toBeUndefined();
    expect(errorCode('string')).toBeUndefined();
  });
});
