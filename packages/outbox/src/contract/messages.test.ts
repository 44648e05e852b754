import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { contractJsonSchemas } from './json-schemas.js';
import { HEADERS, buildDeliveryRequest, buildStatusEvent, messageKey, parseDeliveryRequest, parseStatusEvent } from './messages.js';

const subject = { id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV', tenant_id: 'acme', channel: 'email' as const, recipient: 'ada@example.com', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' };
const at = new Date('2026-05-01T12:00:00Z');

describe('message contract v1', () => {
  it('delivery request: golden bytes and headers', () => {
    const m = buildDeliveryRequest(subject, 2, at, 'retry.2s');
    expect(m.topic).toBe('retry.2s');
    expect(m.value).toBe('{"v":1,"type":"notification.deliver","id":"ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV","tenant_id":"acme","channel":"email","attempt":2,"due_at":"2026-05-01T12:00:00.000Z"}');
    expect(m.headers).toEqual({
      [HEADERS.notificationId]: subject.id,
      [HEADERS.tenantId]: 'acme',
      [HEADERS.schemaVersion]: '1',
      [HEADERS.messageType]: 'notification.deliver',
      [HEADERS.traceparent]: subject.traceparent,
      [HEADERS.attempt]: '2',
      [HEADERS.dueAt]: '2026-05-01T12:00:00.000Z',
    });
    expect(parseDeliveryRequest(Buffer.from(m.value))).toEqual({ ok: true, message: JSON.parse(m.value) });
  });
  it('status event: golden bytes, no recipient or body', () => {
    const m = buildStatusEvent(subject, { type: 'notification.dead', state: 'dead', attempts: 4, dead_reason: 'exhausted', last_error: 'provider returned 503', occurred_at: at });
    expect(m.value).toBe('{"v":1,"type":"notification.dead","id":"ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV","tenant_id":"acme","channel":"email","state":"dead","attempts":4,"dead_reason":"exhausted","last_error":"provider returned 503","next_attempt_at":null,"occurred_at":"2026-05-01T12:00:00.000Z"}');
    expect(m.value).not.toContain('ada@example.com');
    expect(parseStatusEvent(m.value).ok).toBe(true);
  });
  it('keys by tenant, channel and a hash of the recipient', () => {
    const key = messageKey('acme', 'email', 'ada@example.com');
    expect(key).toMatch(/^acme\/email\/[A-Za-z0-9_-]{22}$/);
    expect(key).toBe(messageKey('acme', 'email', 'ada@example.com'));
    expect(key).not.toBe(messageKey('acme', 'email', 'bob@example.com'));
  });
  it.each([
    [null, 'empty message (tombstone)'],
    ['{not json', 'value is not valid JSON'],
    ['[1,2]', 'no schema version field "v"'],
    ['{"v":2,"type":"notification.deliver"}', 'unknown schema version 2'],
    ['{"v":1,"type":"notification.deliver","id":"x","tenant_id":"t","channel":"pager","attempt":1,"due_at":"2026-05-01T12:00:00Z"}', expect.stringContaining('channel')],
  ])('rejects %s without throwing', (value, reason) => {
    expect(parseDeliveryRequest(value)).toEqual({ ok: false, reason });
  });
  it('the JSON Schemas on disk are the ones generated from the parsers (run pnpm contract:schemas)', () => {
    for (const [name, schema] of Object.entries(contractJsonSchemas())) {
      const onDisk = JSON.parse(readFileSync(new URL(`./schemas/${name}.json`, import.meta.url), 'utf8'));
      expect(onDisk).toEqual(schema);
    }
  });
});
