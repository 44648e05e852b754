import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Channel, newNotificationId } from '@notify/outbox';
import type { Delivery, Provider, SendResult } from '../provider.js';

/**
 * One adapter wired to a real local server it can script. `describeProviderContract` runs the
 * same conformance cases against every adapter (webhook → HTTP receiver, email → SMTP server,
 * sms → HTTP gateway).
 */
export interface ProviderContractSubject {
  readonly provider: Provider;
  readonly channel: Channel;
  /** A recipient the server accepts. */
  readonly to: string;
  /** The server answers the next delivery with a failure that retrying cannot fix (e.g. 410, 550, 400). */
  failNextPermanently(): void;
  /** The server answers the next delivery with a failure that may pass (e.g. 503, 451, 503). */
  failNextTransiently(): void;
  /** The server takes the next delivery and never answers. */
  hangNext(): void;
  /**
   * The dedupe key of every delivery the server accepted, in order: `webhook-id`, the
   * `Message-ID`, the gateway's `Idempotency-Key`.
   */
  accepted(): readonly string[];
  /** Deliveries that reached the server at all (accepted, failed or hung). */
  reached(): number;
  /** Stops the server: later sends find nobody listening. */
  stopServer(): Promise<void>;
  /** Releases the provider and the server. */
  close(): Promise<void>;
}

/** Builds a fresh subject (one per test). */
export type ProviderContractFactory = () => Promise<ProviderContractSubject>;

/** A delivery for `subject` with a fresh notification id. */
export function contractDelivery(subject: Pick<ProviderContractSubject, 'channel' | 'to'>, overrides: Partial<Delivery> = {}): Delivery {
  return {
    id: newNotificationId(new Date('2026-05-01T12:00:00Z')),
    tenantId: 'tenant_contract',
    channel: subject.channel,
    to: subject.to,
    subject: subject.channel === 'email' ? 'Contract check' : null,
    body: 'Hello from the provider contract',
    data: { order: 42 },
    metadata: { suite: 'contract' },
    attempt: 1,
    createdAt: new Date('2026-05-01T12:00:00Z'),
    ...overrides,
  };
}

/** Resolves with the send's result, or fails the test when it takes longer than `ms`. */
async function within(ms: number, what: string, promise: Promise<SendResult>): Promise<SendResult> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls `condition` every 10 ms until it holds; fails after `timeoutMs` (the waitFor rule: wait on conditions). */
async function until(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The conformance suite of the `Provider` port (STYLE #12). Every adapter must:
 * deliver once and say `sent`; carry a dedupe key derived from the notification id and equal
 * on every attempt; map the server's permanent and temporary failures to `permanent` and
 * `transient` with an error and a provider status; return transient "timeout" promptly when the
 * signal aborts (and send nothing when it is already aborted); handle concurrent sends; report
 * an unreachable server as transient; never throw.
 */
export function describeProviderContract(name: string, factory: ProviderContractFactory): void {
  describe(`Provider contract: ${name}`, () => {
    let s: ProviderContractSubject;
    const send = (delivery: Delivery, signal: AbortSignal = new AbortController().signal) =>
      within(10_000, `${name}.send`, s.provider.send(delivery, signal));

    beforeEach(async () => {
      s = await factory();
    });
    afterEach(async () => {
      await s.close();
    });

    it('delivers once and reports sent with a provider status', async () => {
      const result = await send(contractDelivery(s));
      expect(result).toMatchObject({ kind: 'sent' });
      expect(result.providerStatus).toMatch(/^2\d\d/);
      expect(s.accepted()).toHaveLength(1);
    });

    it('serves its own channel', () => {
      expect(s.provider.channel).toBe(s.channel);
    });

    it('carries a dedupe key derived from the notification id, equal on every attempt', async () => {
      const first = contractDelivery(s);
      expect((await send(first)).kind).toBe('sent');
      expect((await send({ ...first, attempt: 2 })).kind).toBe('sent');
      const keys = s.accepted();
      expect(keys).toHaveLength(2);
      expect(keys[0]).toContain(first.id);
      expect(keys[1]).toBe(keys[0]);
    });

    it('reports a permanent rejection as permanent, with an error and a provider status', async () => {
      s.failNextPermanently();
      const result = await send(contractDelivery(s));
      expect(result.kind).toBe('permanent');
      if (result.kind === 'sent') throw new Error('unreachable');
      expect(result.error.length).toBeGreaterThan(0);
      expect(result.providerStatus).toBeTruthy();
      expect(s.accepted()).toHaveLength(0);
    });

    it('reports a temporary failure as transient, with an error and a provider status', async () => {
      s.failNextTransiently();
      const result = await send(contractDelivery(s));
      expect(result.kind).toBe('transient');
      if (result.kind === 'sent') throw new Error('unreachable');
      expect(result.error.length).toBeGreaterThan(0);
      expect(result.providerStatus).toBeTruthy();
      // The next attempt goes through: the failure did not break the provider.
      expect((await send(contractDelivery(s))).kind).toBe('sent');
    });

    it('returns transient "timeout" promptly when the signal aborts while the server hangs', async () => {
      s.hangNext();
      const controller = new AbortController();
      const pending = send(contractDelivery(s), controller.signal);
      // Abort only once the server holds the request, so the abort lands mid-request.
      await until(() => s.reached() === 1, 5_000, 'the server to hold the request');
      controller.abort();
      const result = await within(2_000, 'send after abort', pending);
      expect(result).toMatchObject({ kind: 'transient', error: 'timeout' });
      expect(s.accepted()).toHaveLength(0);
    });

    it('sends nothing and returns transient when the signal is already aborted', async () => {
      const controller = new AbortController();
      controller.abort();
      const result = await send(contractDelivery(s), controller.signal);
      expect(result.kind).toBe('transient');
      expect(s.reached()).toBe(0);
    });

    it('delivers 20 concurrent sends exactly once each', async () => {
      const deliveries = Array.from({ length: 20 }, () => contractDelivery(s));
      const results = await Promise.all(deliveries.map((d) => send(d)));
      expect(results.map((r) => r.kind)).toEqual(Array(20).fill('sent'));
      const keys = s.accepted();
      expect(keys).toHaveLength(20);
      for (const d of deliveries) expect(keys.filter((k) => k.includes(d.id))).toHaveLength(1);
    });

    it('reports an unreachable server as transient with an error code, without throwing', async () => {
      await s.stopServer();
      const result = await send(contractDelivery(s));
      expect(result.kind).toBe('transient');
      if (result.kind === 'sent') throw new Error('unreachable');
      expect(result.providerStatus).toMatch(/^E[A-Z_]+$/);
    });
  });
}
