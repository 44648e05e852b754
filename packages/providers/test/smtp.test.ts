import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@notify/runtime';
import { type Provider, createSmtpProvider, messageIdFor } from '@notify/providers';
import { type SmtpSink, contractDelivery, startSmtpSink } from '@notify/providers/testing';

const never = () => new AbortController().signal;
let sink: SmtpSink;
let provider: Provider;

beforeAll(async () => {
  sink = await startSmtpSink();
});
afterAll(async () => {
  await sink.close();
});
beforeAll(() => {
  provider = createSmtpProvider({ url: sink.url, from: 'Notify <notify@mail.example.com>', poolSize: 2 }, { logger: silentLogger });
});
afterAll(async () => {
  await provider.close?.();
});
afterEach(() => {
  sink.messages.length = 0;
});

const email = (overrides = {}) => contractDelivery({ channel: 'email', to: 'ada@example.com' }, overrides);

describe('smtp provider against a real smtp-server', () => {
  it('sends text and the HTML alternative with a Message-ID derived from the notification id', async () => {
    const d = email({ subject: 'Your order', body: 'Plain text', html: '<p>Rich &amp; text</p>' });
    expect(await provider.send(d, never())).toEqual({ kind: 'sent', providerStatus: '250' });
    const [m] = sink.messages;
    expect(m!.messageId).toBe(messageIdFor(d.id, 'mail.example.com'));
    expect(m!.messageId).toBe(`<${d.id}@mail.example.com>`);
    expect(m!.to).toEqual(['ada@example.com']);
    expect(m!.from).toBe('notify@mail.example.com');
    expect(m!.subject).toBe('Your order');
    expect(m!.raw).toMatch(/Content-Type: text\/plain/);
    expect(m!.raw).toMatch(/Content-Type: text\/html/);
    expect(m!.raw).toContain('Plain text');
    expect(m!.raw).toMatch(/X-Notification-Id: ntf_/i);
  });

  it('uses the same Message-ID on every attempt', async () => {
    const d = email();
    await provider.send(d, never());
    await provider.send({ ...d, attempt: 2 }, never());
    expect(sink.messages.map((m) => m.messageId)).toEqual([`<${d.id}@mail.example.com>`, `<${d.id}@mail.example.com>`]);
  });

  it.each([
    ['rcpt', 550, '5.1.1 mailbox unavailable', 'permanent', '550 5.1.1'],
    ['rcpt', 551, '5.1.6 user not local', 'permanent', '551 5.1.6'],
    ['rcpt', 553, '5.1.3 mailbox name not allowed', 'permanent', '553 5.1.3'],
    ['data', 554, '5.7.1 message rejected as spam', 'permanent', '554 5.7.1'],
    ['data', 552, 'message size exceeds limit', 'permanent', '552'],
    ['mail', 550, '5.7.1 sender rejected', 'permanent', '550 5.7.1'],
    ['rcpt', 450, '4.2.1 mailbox busy', 'transient', '450 4.2.1'],
    ['rcpt', 451, '4.3.0 local error, try again', 'transient', '451 4.3.0'],
    ['rcpt', 452, '4.2.2 mailbox full', 'transient', '452 4.2.2'],
    ['data', 451, '4.7.1 greylisted', 'transient', '451 4.7.1'],
    ['mail', 421, '4.7.0 too many connections', 'transient', '421 4.7.0'],
  ] as const)('%s → %i %s is %s (%s)', async (stage, code, message, kind, status) => {
    sink.script({ stage, code, message });
    const result = await provider.send(email(), never());
    expect(result).toMatchObject({ kind, providerStatus: status, error: expect.stringContaining(`SMTP ${code}`) });
    expect(sink.messages).toHaveLength(0);
    // The pool recovers: the next message goes through.
    expect((await provider.send(email(), never())).kind).toBe('sent');
  });

  it("keeps the addresses a server's reply quotes out of the error (it becomes last_error and the events other teams read)", async () => {
    for (const [stage, code, message] of [
      ['rcpt', 550, '5.1.1 <ada@example.com>: Recipient address rejected: User unknown'],
      ['rcpt', 451, '4.7.1 ada@example.com greylisted, try again'],
      ['data', 554, '5.7.1 message from notify@mail.example.com to ada@example.com (user "Ada") refused'],
    ] as const) {
      sink.script({ stage, code, message });
      const result = await provider.send(email(), never());
      expect(result.kind).not.toBe('sent');
      if (result.kind === 'sent') continue;
      expect(result.error).not.toMatch(/@/);
      expect(result.error).toContain('<address>');
      expect(result.error).toMatch(new RegExp(`^SMTP ${code} after `));
    }
    expect((await provider.send(email(), never())).kind).toBe('sent');
  });

  it('a 421 greeting on a fresh connection is transient', async () => {
    const fresh = await startSmtpSink();
    const p = createSmtpProvider({ url: fresh.url, from: 'notify@example.com' }, { logger: silentLogger });
    try {
      fresh.script({ stage: 'connect', code: 421, message: '4.3.2 service not available' });
      expect(await p.send(email(), never())).toMatchObject({ kind: 'transient', providerStatus: expect.stringMatching(/^421/) });
      expect((await p.send(email(), never())).kind).toBe('sent');
    } finally {
      await p.close?.();
      await fresh.close();
    }
  });

  it('connection refused is transient with ECONNREFUSED', async () => {
    const gone = await startSmtpSink();
    await gone.close();
    const p = createSmtpProvider({ url: gone.url, from: 'notify@example.com' }, { logger: silentLogger });
    try {
      expect(await p.send(email(), never())).toMatchObject({ kind: 'transient', providerStatus: 'ECONNREFUSED' });
    } finally {
      await p.close?.();
    }
  });
});
