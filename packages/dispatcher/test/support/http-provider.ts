import type { Delivery, Provider, SendResult } from '@notify/providers';

/**
 * A small real provider for the dispatcher's integration tests: POSTs `{ id, attempt, body }`
 * to the notification's webhook URL (a local `Receiver`) and classifies the answer like the
 * article: 2xx sent; 408/429/5xx transient (Retry-After in seconds honoured); other 4xx
 * permanent; network errors and aborts transient. The production webhook adapter (SSRF guard,
 * signatures) is tested by the providers' own suite; the e2e test uses it.
 */
export function createHttpTestProvider(now: () => Date = () => new Date()): Provider {
  return {
    channel: 'webhook',
    async send(delivery: Delivery, signal: AbortSignal): Promise<SendResult> {
      let res: Response;
      try {
        res = await fetch(delivery.to, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: delivery.id, attempt: delivery.attempt, body: delivery.body }),
          signal,
        });
        await res.arrayBuffer();
      } catch (err) {
        return { kind: 'transient', error: signal.aborted ? 'timeout' : `network error: ${(err as Error).message}` };
      }
      const status = String(res.status);
      if (res.ok) return { kind: 'sent', providerStatus: status };
      if (res.status === 408 || res.status === 429 || res.status >= 500) {
        const retryAfter = Number(res.headers.get('retry-after'));
        const notBefore = Number.isFinite(retryAfter) && retryAfter > 0 ? new Date(now().getTime() + retryAfter * 1000) : undefined;
        return { kind: 'transient', error: `receiver returned ${status}`, providerStatus: status, ...(notBefore ? { notBefore } : {}) };
      }
      return { kind: 'permanent', error: `receiver returned ${status}`, providerStatus: status };
    },
  };
}
