/**
 * Ordering and concurrency through real Kafka and PostgreSQL: the in-flight bound is global
 * (not per partition), one slow key does not hold up other keys of the same partition, and one
 * key's messages are delivered in enqueue order.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/support/wait.js';
import { countByState, startHarness, type Harness } from './support/harness.js';
import { createHttpTestProvider } from './support/http-provider.js';
import { gate, startReceiver, type Receiver } from './support/receiver.js';

let h: Harness | undefined;
let receiver: Receiver | undefined;
afterEach(async () => {
  await h?.close();
  await receiver?.close();
  h = receiver = undefined;
});

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('dispatcher concurrency', () => {
  it('runs 100 notifications with never more than 3 provider calls in flight', async () => {
    h = await startHarness({ partitions: 6, dispatcher: { maxInFlight: 3 } });
    // Each answer takes a little while, so calls overlap whenever the dispatcher lets them.
    receiver = await startReceiver(async () => {
      await tick(15);
      return { status: 200 };
    });
    for (let i = 0; i < 100; i++) await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${receiver.url}/r/${i}`, body: `n${i}` });
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(async () => (await countByState(h as Harness)).sent === 100, { timeoutMs: 50_000, message: '100 sent' });
    expect(r.received).toHaveLength(100);
    expect(new Set(r.received.map((x) => x.id)).size).toBe(100);
    expect(r.maxOpen).toBe(3);
  });

  it('keeps delivering other keys of the same partition while one key is slow, and keeps that key in order', async () => {
    // One partition: every key shares it, so only the per-key scheduling can keep them apart.
    h = await startHarness({ partitions: 1, dispatcher: { maxInFlight: 4, sendTimeoutMs: 20_000 } });
    const slow = gate();
    receiver = await startReceiver(async (req) => {
      if (req.path === '/slow' && req.body === 'first') await slow.promise;
      return { status: 200 };
    });
    const url = receiver.url;
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${url}/slow`, body: 'first' });
    await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${url}/slow`, body: 'second' });
    for (let i = 0; i < 20; i++) await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${url}/fast/${i}`, body: `fast ${i}` });
    await h.startDispatcher({ webhook: createHttpTestProvider() });

    const r = receiver;
    await waitFor(() => r.received.filter((x) => x.path.startsWith('/fast/')).length === 20, {
      timeoutMs: 20_000,
      message: '20 fast deliveries',
    });
    // The slow key's first call is still held, and its second message has not overtaken it.
    expect(r.open).toBe(1);
    expect(r.received.filter((x) => x.path === '/slow')).toHaveLength(0);
    slow.open();
    await waitFor(() => r.received.filter((x) => x.path === '/slow').length === 2, { timeoutMs: 10_000, message: 'slow key done' });
    expect(r.received.filter((x) => x.path === '/slow').map((x) => x.body)).toEqual(['first', 'second']);
    await waitFor(async () => (await countByState(h as Harness)).sent === 22, { message: '22 sent' });
  });

  it('delivers one recipient’s notifications in enqueue order while other recipients run alongside', async () => {
    h = await startHarness({ partitions: 3, dispatcher: { maxInFlight: 6 } });
    receiver = await startReceiver(async () => {
      await tick(Math.floor(Math.random() * 10));
      return { status: 200 };
    });
    const url = receiver.url;
    for (let i = 0; i < 30; i++) {
      await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${url}/same`, body: `same ${i}` });
      await h.enqueue({ tenant_id: 't1', channel: 'webhook', to: `${url}/other/${i % 5}`, body: `other ${i}` });
    }
    await h.startDispatcher({ webhook: createHttpTestProvider() });
    const r = receiver;
    await waitFor(() => r.received.length === 60, { timeoutMs: 20_000, message: '60 deliveries' });
    expect(r.received.filter((x) => x.path === '/same').map((x) => x.body)).toEqual(Array.from({ length: 30 }, (_, i) => `same ${i}`));
    for (let k = 0; k < 5; k++) {
      const bodies = r.received.filter((x) => x.path === `/other/${k}`).map((x) => Number(x.body.split(' ')[1]));
      expect(bodies).toEqual([...bodies].sort((a, b) => a - b));
    }
    expect(r.maxOpen).toBeGreaterThan(1);
  });
});
