import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { signWebhook, webhookSecretKey } from '../webhook/signature.js';
import { verifyWebhookSignature } from './verify-webhook.js';

// The published Standard Webhooks test vector: a receiver's off-the-shelf library accepts what we send.
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
  timestamp: 1614265330,
  body: '{"test": 2432232314}',
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};
const at = new Date(VECTOR.timestamp * 1000);
const headers = { 'webhook-id': VECTOR.id, 'webhook-timestamp': String(VECTOR.timestamp), 'webhook-signature': VECTOR.signature };

describe('Standard Webhooks signing', () => {
  it('reproduces the published test vector', () => {
    expect(signWebhook(VECTOR)).toBe(VECTOR.signature);
  });

  it('verifies the vector, with header names in any case and several signatures', () => {
    expect(verifyWebhookSignature({ secret: VECTOR.secret, headers, body: VECTOR.body, now: at })).toEqual({
      ok: true,
      id: VECTOR.id,
      timestamp: at,
    });
    const upper = {
      'Webhook-Id': VECTOR.id,
      'WEBHOOK-TIMESTAMP': String(VECTOR.timestamp),
      'Webhook-Signature': `v1,bm9wZQ== ${VECTOR.signature}`,
    };
    expect(verifyWebhookSignature({ secret: VECTOR.secret, headers: upper, body: VECTOR.body, now: at }).ok).toBe(true);
  });

  it('rejects a changed body, id, secret or signature version', () => {
    const base = { secret: VECTOR.secret, headers, body: VECTOR.body, now: at };
    expect(verifyWebhookSignature({ ...base, body: '{"test": 2432232315}' })).toEqual({ ok: false, reason: 'no v1 signature matches' });
    expect(verifyWebhookSignature({ ...base, headers: { ...headers, 'webhook-id': 'msg_other' } }).ok).toBe(false);
    expect(verifyWebhookSignature({ ...base, secret: 'whsec_' + Buffer.from('another key').toString('base64') }).ok).toBe(false);
    expect(
      verifyWebhookSignature({ ...base, headers: { ...headers, 'webhook-signature': VECTOR.signature.replace('v1,', 'v2,') } }).ok,
    ).toBe(false);
  });

  it('rejects stale and future timestamps outside the tolerance (replays)', () => {
    const base = { secret: VECTOR.secret, headers, body: VECTOR.body };
    expect(verifyWebhookSignature({ ...base, now: new Date(at.getTime() + 301_000) })).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/300 s/),
    });
    expect(verifyWebhookSignature({ ...base, now: new Date(at.getTime() - 301_000) }).ok).toBe(false);
    expect(verifyWebhookSignature({ ...base, now: new Date(at.getTime() + 299_000) }).ok).toBe(true);
    expect(verifyWebhookSignature({ ...base, now: new Date(at.getTime() + 3_600_000), toleranceSeconds: 7200 }).ok).toBe(true);
  });

  it("signs with each secret's own key when the keys are remembered, and throws for a bad secret every time", () => {
    const input = { id: 'ntf_1', timestamp: 1, body: '{}' };
    const a = signWebhook({ ...input, secret: 'secret a' });
    const b = signWebhook({ ...input, secret: 'secret b' });
    expect(a).not.toBe(b);
    expect(signWebhook({ ...input, secret: 'secret a' })).toBe(a);
    expect(signWebhook({ ...input, secret: 'whsec_aGVsbG8=' })).toBe(signWebhook({ ...input, secret: 'hello' }));
    expect(() => signWebhook({ ...input, secret: '' })).toThrow(/empty/);
    expect(() => signWebhook({ ...input, secret: '' })).toThrow(/empty/);
  });

  it('rejects missing headers', () => {
    expect(verifyWebhookSignature({ secret: VECTOR.secret, headers: {}, body: VECTOR.body, now: at })).toMatchObject({ ok: false });
  });

  it('takes whsec_ secrets as base64 and other secrets as raw bytes', () => {
    expect(webhookSecretKey('whsec_aGVsbG8=')).toEqual(Buffer.from('hello'));
    expect(webhookSecretKey('plain secret')).toEqual(Buffer.from('plain secret'));
    expect(() => webhookSecretKey('whsec_not base64!')).toThrow(/not base64/);
    expect(() => webhookSecretKey('')).toThrow(/empty/);
    const raw = signWebhook({ secret: 'plain secret', id: 'ntf_1', timestamp: 1, body: '{}' });
    expect(
      verifyWebhookSignature({
        secret: 'plain secret',
        headers: { 'webhook-id': 'ntf_1', 'webhook-timestamp': '1', 'webhook-signature': raw },
        body: '{}',
        now: new Date(1000),
      }).ok,
    ).toBe(true);
  });
});

describe('receivers verify our signatures with the standardwebhooks library', () => {
  const payload = JSON.stringify({ id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV', body: 'Welcome, Ada', data: { n: 1 } });
  const now = Math.floor(Date.now() / 1000);
  const sent = (secret: string, body = payload) => ({
    'webhook-id': 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV',
    'webhook-timestamp': String(now),
    'webhook-signature': signWebhook({ secret, id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV', timestamp: now, body }),
  });

  it('accepts what signWebhook sends with a whsec_ secret, and refuses a changed body', () => {
    const secret = `whsec_${Buffer.from('a 24-byte signing key!!!').toString('base64')}`;
    const receiver = new Webhook(secret);
    expect(receiver.verify(payload, sent(secret))).toEqual(JSON.parse(payload));
    expect(() => receiver.verify(payload.replace('Ada', 'Eve'), sent(secret))).toThrow();
  });

  it('accepts a raw secret configured as raw bytes on the receiving side', () => {
    const receiver = new Webhook(Buffer.from('plain secret').toString('base64'));
    expect(receiver.verify(payload, sent('plain secret'))).toEqual(JSON.parse(payload));
  });

  it('accepts a header with several signatures while a key rotates', () => {
    const old = `whsec_${Buffer.from('the old key').toString('base64')}`;
    const next = `whsec_${Buffer.from('the new key').toString('base64')}`;
    const headers = sent(next);
    headers['webhook-signature'] = `${sent(old)['webhook-signature']} ${headers['webhook-signature']}`;
    expect(new Webhook(old).verify(payload, headers)).toEqual(JSON.parse(payload));
    expect(new Webhook(next).verify(payload, headers)).toEqual(JSON.parse(payload));
  });
});
