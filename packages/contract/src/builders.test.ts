import { describe, expect, it } from 'vitest';
import { buildDeliveryRequest, buildStatusEvent, type ContractMessage, type MessageSubject } from './builders.js';
import { HEADERS } from './headers.js';
import { messageKey } from './message-key.js';
import { parseDeliveryRequest, parseStatusEvent } from './parse.js';
import { serializeDeliveryRequest, serializeStatusEvent } from './serialize.js';

// Golden records: the bytes `@notify/outbox` produced before this package existed (generated from
// packages/outbox/src/contract/messages.ts and pasted here). They are the wire format of v1.
const traced: MessageSubject = {
  id: 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV',
  tenant_id: 'acme',
  channel: 'email',
  recipient: 'ada@example.com',
  traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
};
const untraced: MessageSubject = {
  id: 'ntf_01HZY8Q5W3K9V2N7M4P6R8T0XB',
  tenant_id: 'globex',
  channel: 'webhook',
  recipient: 'https://hooks.globex.test/notify',
  traceparent: null,
};
const emptyTrace: MessageSubject = {
  id: 'ntf_01J0000000000000000000000C',
  tenant_id: 'initech/eu',
  channel: 'sms',
  recipient: '+15555550100',
  traceparent: '',
};
const at = new Date('2026-05-01T12:00:00Z');
const later = new Date('2026-05-01T12:00:01.5Z');
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

/** The record with its headers as ordered entries: kafkajs writes headers in key order, so the builders' order is part of their bytes (not of the contract: docs/message-contract.md). */
function wire(m: ContractMessage) {
  return { topic: m.topic, key: m.key, value: m.value, headers: Object.entries(m.headers) };
}

describe('messageKey', () => {
  it.each([
    ['acme', 'email', 'ada@example.com', 'acme/email/tfyF5VdV-eDQMKEKtEKbay'],
    ['globex', 'webhook', 'https://hooks.globex.test/notify', 'globex/webhook/awSLoSjpnsC842lzocQqmr'],
    ['initech/eu', 'sms', '+15555550100', 'initech/eu/sms/DL8BlHkkH2bJxg055p4GmJ'],
    ['t', 'email', '', 't/email/47DEQpj8HBSa-_TImW-5JC'],
  ])('%s/%s/hash(%s) is the golden key', (tenant, channel, recipient, key) => {
    expect(messageKey(tenant, channel, recipient)).toBe(key);
  });
});

describe('buildDeliveryRequest: golden records', () => {
  it('a retry with trace context', () => {
    expect(wire(buildDeliveryRequest(traced, 2, at, 'retry.2s'))).toEqual({
      topic: 'retry.2s',
      key: 'acme/email/tfyF5VdV-eDQMKEKtEKbay',
      value:
        '{"v":1,"type":"notification.deliver","id":"ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV","tenant_id":"acme","channel":"email","attempt":2,"due_at":"2026-05-01T12:00:00.000Z"}',
      headers: [
        ['notification-id', 'ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV'],
        ['tenant-id', 'acme'],
        ['schema-version', '1'],
        ['message-type', 'notification.deliver'],
        ['traceparent', TRACEPARENT],
        ['attempt', '2'],
        ['due-at', '2026-05-01T12:00:00.000Z'],
      ],
    });
  });
  it('a first attempt on requests (the default topic) without trace context', () => {
    expect(wire(buildDeliveryRequest(untraced, 1, at))).toEqual({
      topic: 'requests',
      key: 'globex/webhook/awSLoSjpnsC842lzocQqmr',
      value:
        '{"v":1,"type":"notification.deliver","id":"ntf_01HZY8Q5W3K9V2N7M4P6R8T0XB","tenant_id":"globex","channel":"webhook","attempt":1,"due_at":"2026-05-01T12:00:00.000Z"}',
      headers: [
        ['notification-id', 'ntf_01HZY8Q5W3K9V2N7M4P6R8T0XB'],
        ['tenant-id', 'globex'],
        ['schema-version', '1'],
        ['message-type', 'notification.deliver'],
        ['attempt', '1'],
        ['due-at', '2026-05-01T12:00:00.000Z'],
      ],
    });
  });
  it('an empty traceparent is left out; milliseconds are kept', () => {
    expect(wire(buildDeliveryRequest(emptyTrace, 3, later, 'retry.1500ms'))).toEqual({
      topic: 'retry.1500ms',
      key: 'initech/eu/sms/DL8BlHkkH2bJxg055p4GmJ',
      value:
        '{"v":1,"type":"notification.deliver","id":"ntf_01J0000000000000000000000C","tenant_id":"initech/eu","channel":"sms","attempt":3,"due_at":"2026-05-01T12:00:01.500Z"}',
      headers: [
        ['notification-id', 'ntf_01J0000000000000000000000C'],
        ['tenant-id', 'initech/eu'],
        ['schema-version', '1'],
        ['message-type', 'notification.deliver'],
        ['attempt', '3'],
        ['due-at', '2026-05-01T12:00:01.500Z'],
      ],
    });
  });
});

const baseHeaders = (s: MessageSubject, type: string) => [
  ['notification-id', s.id],
  ['tenant-id', s.tenant_id],
  ['schema-version', '1'],
  ['message-type', type],
  ...(s.traceparent ? [['traceparent', s.traceparent]] : []),
];

describe('buildStatusEvent: golden records, one per event type', () => {
  it.each([
    [
      'notification.queued (at enqueue)',
      buildStatusEvent(untraced, { type: 'notification.queued', state: 'queued', attempts: 0, next_attempt_at: at, occurred_at: at }),
      untraced,
      '{"v":1,"type":"notification.queued","id":"ntf_01HZY8Q5W3K9V2N7M4P6R8T0XB","tenant_id":"globex","channel":"webhook","state":"queued","attempts":0,"dead_reason":null,"last_error":null,"next_attempt_at":"2026-05-01T12:00:00.000Z","occurred_at":"2026-05-01T12:00:00.000Z"}',
    ],
    [
      'notification.retry_scheduled (dead_reason undefined becomes null)',
      buildStatusEvent(traced, {
        type: 'notification.retry_scheduled',
        state: 'queued',
        attempts: 1,
        dead_reason: undefined,
        last_error: 'provider returned 503',
        next_attempt_at: later,
        occurred_at: at,
      }),
      traced,
      '{"v":1,"type":"notification.retry_scheduled","id":"ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV","tenant_id":"acme","channel":"email","state":"queued","attempts":1,"dead_reason":null,"last_error":"provider returned 503","next_attempt_at":"2026-05-01T12:00:01.500Z","occurred_at":"2026-05-01T12:00:00.000Z"}',
    ],
    [
      'notification.sent',
      buildStatusEvent(traced, {
        type: 'notification.sent',
        state: 'sent',
        attempts: 2,
        dead_reason: undefined,
        last_error: null,
        next_attempt_at: null,
        occurred_at: later,
      }),
      traced,
      '{"v":1,"type":"notification.sent","id":"ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV","tenant_id":"acme","channel":"email","state":"sent","attempts":2,"dead_reason":null,"last_error":null,"next_attempt_at":null,"occurred_at":"2026-05-01T12:00:01.500Z"}',
    ],
    [
      'notification.dead',
      buildStatusEvent(traced, {
        type: 'notification.dead',
        state: 'dead',
        attempts: 4,
        dead_reason: 'exhausted',
        last_error: 'provider returned 503',
        occurred_at: at,
      }),
      traced,
      '{"v":1,"type":"notification.dead","id":"ntf_01ARZ3NDEKTSV4RRFFQ69G5FAV","tenant_id":"acme","channel":"email","state":"dead","attempts":4,"dead_reason":"exhausted","last_error":"provider returned 503","next_attempt_at":null,"occurred_at":"2026-05-01T12:00:00.000Z"}',
    ],
    [
      'notification.cancelled (escapes in last_error, empty traceparent left out)',
      buildStatusEvent(emptyTrace, {
        type: 'notification.cancelled',
        state: 'cancelled',
        attempts: 1,
        last_error: 'SMS gateway said "busy" – réessayez\nlater',
        occurred_at: at,
      }),
      emptyTrace,
      '{"v":1,"type":"notification.cancelled","id":"ntf_01J0000000000000000000000C","tenant_id":"initech/eu","channel":"sms","state":"cancelled","attempts":1,"dead_reason":null,"last_error":"SMS gateway said \\"busy\\" – réessayez\\nlater","next_attempt_at":null,"occurred_at":"2026-05-01T12:00:00.000Z"}',
    ],
    [
      'notification.requeued (manual retry)',
      buildStatusEvent(untraced, {
        type: 'notification.requeued',
        state: 'queued',
        attempts: 4,
        last_error: 'connect ECONNREFUSED 127.0.0.1:9',
        next_attempt_at: at,
        occurred_at: at,
      }),
      untraced,
      '{"v":1,"type":"notification.requeued","id":"ntf_01HZY8Q5W3K9V2N7M4P6R8T0XB","tenant_id":"globex","channel":"webhook","state":"queued","attempts":4,"dead_reason":null,"last_error":"connect ECONNREFUSED 127.0.0.1:9","next_attempt_at":"2026-05-01T12:00:00.000Z","occurred_at":"2026-05-01T12:00:00.000Z"}',
    ],
  ])('%s', (_name, message, subject, value) => {
    expect(wire(message)).toEqual({
      topic: 'events',
      key: messageKey(subject.tenant_id, subject.channel, subject.recipient),
      value,
      headers: baseHeaders(subject, JSON.parse(value).type),
    });
    expect(message.value).not.toContain(subject.recipient);
    expect(Object.values(message.headers)).not.toContain(subject.recipient);
  });
});

describe('round trips', () => {
  it('parse then serialize gives back the golden bytes', () => {
    const request = buildDeliveryRequest(traced, 2, at, 'retry.2s');
    const parsedRequest = parseDeliveryRequest(Buffer.from(request.value));
    expect(parsedRequest).toEqual({ ok: true, message: JSON.parse(request.value) });
    if (parsedRequest.ok) expect(serializeDeliveryRequest(parsedRequest.message)).toBe(request.value);

    const event = buildStatusEvent(traced, {
      type: 'notification.dead',
      state: 'dead',
      attempts: 4,
      dead_reason: 'exhausted',
      last_error: 'x',
      occurred_at: at,
    });
    const parsedEvent = parseStatusEvent(event.value);
    expect(parsedEvent).toEqual({ ok: true, message: JSON.parse(event.value) });
    if (parsedEvent.ok) expect(serializeStatusEvent(parsedEvent.message)).toBe(event.value);
  });
  it('serialize writes wire order and only contract fields, whatever the input object', () => {
    const shuffled = {
      due_at: '2026-05-01T12:00:00.000Z',
      attempt: 2,
      channel: 'email',
      tenant_id: 'acme',
      id: 'ntf_1',
      type: 'notification.deliver',
      v: 1,
      recipient: 'ada@example.com',
    } as const;
    expect(serializeDeliveryRequest(shuffled)).toBe(
      '{"v":1,"type":"notification.deliver","id":"ntf_1","tenant_id":"acme","channel":"email","attempt":2,"due_at":"2026-05-01T12:00:00.000Z"}',
    );
  });
  it('header names are the HEADERS values', () => {
    const request = buildDeliveryRequest(traced, 2, at);
    expect(Object.keys(request.headers)).toEqual([
      HEADERS.notificationId,
      HEADERS.tenantId,
      HEADERS.schemaVersion,
      HEADERS.messageType,
      HEADERS.traceparent,
      HEADERS.attempt,
      HEADERS.dueAt,
    ]);
  });
});
