import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '@notify/runtime';
import { ManualClock } from '@notify/runtime/testing';
import { type Provider, createSmsHttpProvider } from '@notify/providers';
import { type HttpReceiver, contractDelivery, startHttpReceiver } from '@notify/providers/testing';

const never = () => new AbortController().signal;
const clock = new ManualClock('2026-05-01T12:00:00Z');
let gateway: HttpReceiver;
let provider: Provider;

beforeAll(async () => {
  gateway = await startHttpReceiver({
    defaultResponse: { status: 201, headers: { 'content-type': 'application/json' }, body: '{"sid":"SM1"}' },
  });
  provider = createSmsHttpProvider(
    { baseUrl: `${gateway.url}/2010-04-01/`, accountId: 'AC123', authToken: 'tok3n', from: '+15550000000' },
    { clock, logger: silentLogger },
  );
});
afterAll(async () => {
  await provider.close?.();
  await gateway.close();
});
afterEach(() => {
  gateway.requests.length = 0;
});

const sms = (overrides = {}) => contractDelivery({ channel: 'sms', to: '+14155550100' }, { body: 'Your code is 123456', ...overrides });

describe('sms-http provider against a local Twilio-style gateway', () => {
  it('POSTs a form with To, From and Body, basic auth and the notification id as Idempotency-Key', async () => {
    const d = sms();
    expect(await provider.send(d, never())).toEqual({ kind: 'sent', providerStatus: '201' });
    const [req] = gateway.requests;
    expect(req!.method).toBe('POST');
    expect(req!.url).toBe('/2010-04-01/Accounts/AC123/Messages.json');
    expect(req!.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(req!.headers.authorization).toBe(`Basic ${Buffer.from('AC123:tok3n').toString('base64')}`);
    expect(req!.headers['idempotency-key']).toBe(d.id);
    expect(Object.fromEntries(new URLSearchParams(req!.body))).toEqual({
      To: '+14155550100',
      From: '+15550000000',
      Body: 'Your code is 123456',
    });
  });

  it.each([
    [400, 'permanent'],
    [404, 'permanent'],
    [409, 'permanent'],
    [422, 'permanent'],
    [401, 'transient'],
    [403, 'transient'],
    [408, 'transient'],
    [429, 'transient'],
    [500, 'transient'],
    [502, 'transient'],
    [503, 'transient'],
  ] as const)('HTTP %i → %s', async (status, kind) => {
    gateway.script({
      status,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: 21211, message: "The 'To' number +14155550100 is not valid" }),
    });
    const result = await provider.send(sms(), never());
    expect(result).toMatchObject({
      kind,
      providerStatus: String(status),
      error: `sms gateway answered HTTP ${status} (gateway code 21211)`,
    });
    // The gateway's message (which quotes the number) is not copied into the error.
    if (result.kind !== 'sent') expect(result.error).not.toContain('+1415');
  });

  it('honours Retry-After on 429 and 503', async () => {
    gateway.script(
      { status: 429, headers: { 'retry-after': '7' } },
      { status: 503, headers: { 'retry-after': 'Fri, 01 May 2026 13:00:00 GMT' } },
    );
    expect(await provider.send(sms(), never())).toMatchObject({ kind: 'transient', notBefore: new Date('2026-05-01T12:00:07Z') });
    expect(await provider.send(sms(), never())).toMatchObject({ kind: 'transient', notBefore: new Date('2026-05-01T13:00:00Z') });
  });

  it('a non-JSON error body still classifies by status', async () => {
    gateway.script({ status: 400, body: '<html>bad request</html>' });
    expect(await provider.send(sms(), never())).toEqual({
      kind: 'permanent',
      error: 'sms gateway answered HTTP 400',
      providerStatus: '400',
    });
  });

  it('a 201 whose body is cut off or still arriving at the timeout is sent: the gateway accepted the message', async () => {
    gateway.script({ status: 201, body: '{"sid":', bodyEnd: 'reset' }, { status: 201, body: '{"sid":', bodyEnd: 'never' });
    expect(await provider.send(sms(), never())).toEqual({ kind: 'sent', providerStatus: '201' });
    expect(await provider.send(sms(), AbortSignal.timeout(100))).toEqual({ kind: 'sent', providerStatus: '201' });
    gateway.script({ status: 503, body: '{"code":', bodyEnd: 'reset' });
    expect(await provider.send(sms(), never())).toEqual({
      kind: 'transient',
      error: 'sms gateway answered HTTP 503',
      providerStatus: '503',
    });
  });

  it('a reset or an unreachable gateway is transient with the errno', async () => {
    gateway.script('reset');
    expect(await provider.send(sms(), never())).toMatchObject({ kind: 'transient', providerStatus: 'ECONNRESET' });
    const gone = await startHttpReceiver();
    await gone.close();
    const p = createSmsHttpProvider({ baseUrl: gone.url }, { clock, logger: silentLogger });
    expect(await p.send(sms(), never())).toMatchObject({ kind: 'transient', providerStatus: 'ECONNREFUSED' });
    await p.close?.();
  });

  it('without an account id posts to <base>/Messages.json without auth', async () => {
    const p = createSmsHttpProvider({ baseUrl: gateway.url }, { clock, logger: silentLogger });
    await p.send(sms(), never());
    expect(gateway.requests[0]!.url).toBe('/Messages.json');
    expect(gateway.requests[0]!.headers.authorization).toBeUndefined();
    await p.close?.();
  });
});
