import { silentLogger, systemClock } from '@notify/runtime';
import { createSmsHttpProvider, createSmtpProvider, createWebhookProvider } from '@notify/providers';
import { type ReceivedRequest, describeProviderContract, startHttpReceiver, startSmtpSink } from '@notify/providers/testing';

const acceptedKeys = (requests: readonly ReceivedRequest[], header: string) =>
  requests.filter((r) => typeof r.answer === 'object' && r.answer.status < 300).map((r) => String(r.headers[header]));

describeProviderContract('webhook → local HTTP receiver', async () => {
  const receiver = await startHttpReceiver();
  const provider = createWebhookProvider({ allowCidrs: ['127.0.0.1/32'] }, { clock: systemClock, logger: silentLogger });
  return {
    provider,
    channel: 'webhook',
    to: `${receiver.url}/hooks/orders`,
    failNextPermanently: () => receiver.script({ status: 410 }),
    failNextTransiently: () => receiver.script({ status: 503 }),
    hangNext: () => receiver.script('hang'),
    accepted: () => acceptedKeys(receiver.requests, 'webhook-id'),
    reached: () => receiver.requests.length,
    stopServer: () => receiver.close(),
    close: async () => {
      await provider.close?.();
      await receiver.close();
    },
  };
});

describeProviderContract('sms-http → local Twilio-style gateway', async () => {
  const gateway = await startHttpReceiver({
    defaultResponse: { status: 201, headers: { 'content-type': 'application/json' }, body: '{"sid":"SM1","status":"queued"}' },
  });
  const provider = createSmsHttpProvider(
    { baseUrl: `${gateway.url}/2010-04-01`, accountId: 'AC123', authToken: 'secret-token', from: '+15550000000' },
    { clock: systemClock, logger: silentLogger },
  );
  return {
    provider,
    channel: 'sms',
    to: '+14155550100',
    failNextPermanently: () =>
      gateway.script({ status: 400, headers: { 'content-type': 'application/json' }, body: '{"code":21211,"message":"Invalid To"}' }),
    failNextTransiently: () => gateway.script({ status: 503 }),
    hangNext: () => gateway.script('hang'),
    accepted: () => acceptedKeys(gateway.requests, 'idempotency-key'),
    reached: () => gateway.requests.length,
    stopServer: () => gateway.close(),
    close: async () => {
      await provider.close?.();
      await gateway.close();
    },
  };
});

describeProviderContract('smtp → local smtp-server', async () => {
  const sink = await startSmtpSink();
  const provider = createSmtpProvider({ url: sink.url, from: 'Notify <notify@example.com>' }, { logger: silentLogger });
  return {
    provider,
    channel: 'email',
    to: 'ada@example.com',
    failNextPermanently: () => sink.script({ stage: 'rcpt', code: 550, message: '5.1.1 mailbox unavailable' }),
    failNextTransiently: () => sink.script({ stage: 'rcpt', code: 451, message: '4.3.0 try again later' }),
    hangNext: () => sink.script({ stage: 'rcpt', hang: true }),
    accepted: () => sink.messages.map((m) => m.messageId ?? ''),
    reached: () => sink.transactions,
    stopServer: () => sink.close(),
    close: async () => {
      await provider.close?.();
      await sink.close();
    },
  };
});
