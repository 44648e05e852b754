import { describe, expect, it } from 'vitest';
import { callProvider } from './provider-call.js';
import type { Delivery, Provider, SendResult } from './provider/provider.js';

const delivery: Delivery = {
  id: 'ntf_1',
  tenantId: 't',
  channel: 'webhook',
  to: 'https://example.com/h',
  subject: null,
  body: 'b',
  data: null,
  metadata: {},
  attempt: 1,
  createdAt: new Date(0),
};
const provider = (send: Provider['send']): Provider => ({ channel: 'webhook', send });
/** Answers `onAbort` when the signal fires (an honest provider), or never (`null`). */
const waitForAbort = (onAbort: SendResult | null) =>
  provider(
    (_d, signal) =>
      new Promise((resolve) => {
        if (signal.aborted && onAbort) resolve(onAbort);
        signal.addEventListener('abort', () => onAbort && resolve(onAbort));
      }),
  );
const live = () => new AbortController().signal;

describe('callProvider', () => {
  it('returns the provider answer', async () => {
    expect(await callProvider(provider(async () => ({ kind: 'sent', providerStatus: '202' })), delivery, { timeoutMs: 1000, shutdown: live() })).toEqual({
      kind: 'result',
      result: { kind: 'sent', providerStatus: '202' },
    });
  });

  it('turns a throw into a transient failure with the message', async () => {
    const throwing = provider(async () => {
      throw new Error('ECONNRESET');
    });
    expect(await callProvider(throwing, delivery, { timeoutMs: 1000, shutdown: live() })).toEqual({ kind: 'result', result: { kind: 'transient', error: 'ECONNRESET' } });
  });

  it('aborts at the timeout and takes the honest provider’s own answer', async () => {
    const r = await callProvider(waitForAbort({ kind: 'transient', error: 'timeout', providerStatus: 'timeout' }), delivery, { timeoutMs: 20, shutdown: live() });
    expect(r).toEqual({ kind: 'result', result: { kind: 'transient', error: 'timeout', providerStatus: 'timeout' } });
  });

  it('gives up on a provider that ignores the signal after the grace', async () => {
    const r = await callProvider(waitForAbort(null), delivery, { timeoutMs: 20, shutdown: live(), graceMs: 20 });
    expect(r).toEqual({ kind: 'result', result: { kind: 'transient', error: 'timeout after 20 ms' } });
  });

  it('abandons the call on shutdown, unless it was sent', async () => {
    const shutdown = new AbortController();
    const pending = callProvider(waitForAbort({ kind: 'transient', error: 'aborted' }), delivery, { timeoutMs: 10_000, shutdown: shutdown.signal });
    shutdown.abort();
    expect(await pending).toEqual({ kind: 'abandoned' });
    const again = new AbortController();
    const sent = callProvider(waitForAbort({ kind: 'sent' }), delivery, { timeoutMs: 10_000, shutdown: again.signal });
    again.abort();
    expect(await sent).toEqual({ kind: 'result', result: { kind: 'sent' } });
  });
});
