import { describe, expect, it } from 'vitest';
import { canonicalJson, requestHash } from './idempotency.js';
import { validateIntent } from './model/intent.js';

const now = new Date('2026-05-01T12:00:00Z');

describe('requestHash', () => {
  it('ignores key order, the key itself and the trace context', () => {
    const a = validateIntent({ tenant_id: 't', channel: 'webhook', to: 'https://x.test/h', body: 'b', data: { a: 1, b: [1, { c: 2, d: 3 }] }, idempotency_key: 'k1' }, now);
    const b = validateIntent({ data: { b: [1, { d: 3, c: 2 }], a: 1 }, body: 'b', to: 'https://x.test/h', channel: 'webhook', tenant_id: 't', idempotency_key: 'k2', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, now);
    expect(requestHash(a)).toBe(requestHash(b));
  });
  it('changes when the request changes', () => {
    const a = validateIntent({ tenant_id: 't', channel: 'email', to: 'a@b.co', body: 'one' }, now);
    const b = validateIntent({ tenant_id: 't', channel: 'email', to: 'a@b.co', body: 'two' }, now);
    expect(requestHash(a)).not.toBe(requestHash(b));
  });
  it('canonicalJson sorts nested keys and drops undefined', () => {
    expect(canonicalJson({ b: 1, a: { d: undefined, c: [2, 1] } })).toBe('{"a":{"c":[2,1]},"b":1}');
  });
});
