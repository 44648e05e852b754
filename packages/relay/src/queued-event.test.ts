import { describe, expect, it } from 'vitest';
import { queuedEventHeaders } from './queued-event.js';

describe('queuedEventHeaders', () => {
  it('drops attempt and due-at and sets message-type in place, keeping jsonb key order', () => {
    const request = {
      'tenant-id': 'acme',
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      attempt: '1',
      'due-at': '2026-05-01T12:00:00.000Z',
      'message-type': 'notification.deliver',
      'schema-version': '1',
      'notification-id': 'ntf_01J',
    };
    const event = queuedEventHeaders(request);
    expect(Object.entries(event)).toEqual([
      ['tenant-id', 'acme'],
      ['traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'],
      ['message-type', 'notification.queued'],
      ['schema-version', '1'],
      ['notification-id', 'ntf_01J'],
    ]);
    expect(request['message-type']).toBe('notification.deliver'); // not changed
  });

  it('places a missing message-type where jsonb would', () => {
    expect(Object.keys(queuedEventHeaders({ b: '1', 'tenant-id': 't', 'notification-id': 'n', zzzzzzzzzzzzz: 'z' }))).toEqual([
      'b',
      'tenant-id',
      'message-type',
      'zzzzzzzzzzzzz',
      'notification-id',
    ]);
  });
});
