import type { SqlExecutor } from '@notify/outbox';
import {
  TargetRefusedError,
  WEBHOOK_HEADERS,
  classifyCode,
  classifyErrno,
  createHttpAgent,
  createTargetGuard,
  errorCode,
  httpPost,
  parseRetryAfter,
  signWebhook,
} from '@notify/providers';
import { type Clock, type Logger, createPeriodicService, errorSummary } from '@notify/runtime';
import type { RetryConfig } from '../config.js';
import { nextAttemptAt } from '../retry/backoff.js';
import { type ClaimedCallbackDelivery, callbackDeliveryClaim } from './sql/callback-delivery-claim.js';
import { callbackDeliveryRecord } from './sql/callback-delivery-record.js';

/** Settings of the callback sender. */
export interface CallbackSenderConfig {
  /** Attempts, backoff and jitter: the notifications' own retry rules (NOTIFY_MAX_ATTEMPTS, NOTIFY_BASE_DELAY_MS, …). */
  readonly retry: Pick<RetryConfig, 'maxAttempts' | 'baseDelayMs' | 'maxDelayMs' | 'jitter'>;
  /** One POST is aborted after this (NOTIFY_SEND_TIMEOUT_MS); a timeout is transient. */
  readonly sendTimeoutMs: number;
  /** NOTIFY_WEBHOOK_ALLOW_CIDRS: the SSRF policy's exceptions, as for webhooks. */
  readonly allowCidrs: readonly string[];
  /** NOTIFY_WEBHOOK_SECRET: signs when the tenant has no secret of its own. */
  readonly signingSecret?: string | undefined;
  /** Between claims when the last one found nothing to do. Default 250 ms. */
  readonly pollIntervalMs?: number;
  /** Deliveries claimed (and sent concurrently) at once. Default 32. */
  readonly batchSize?: number;
  /** Of one tenant per claim. Default 4. */
  readonly perTenant?: number;
}

/**
 * What became of status callbacks, for metrics: `delivered`, `retried` (a transient failure with
 * attempts left), `failed` (for good) from the sender; `dropped` (the tenant's backlog was full)
 * from the intake, with how many. Called after the outcome is recorded; it must not throw.
 */
export type CallbackOutcomeObserver = (outcome: 'delivered' | 'retried' | 'failed' | 'dropped', count: number) => void;

/** What the sender needs. */
export interface CallbackSenderDeps {
  readonly db: SqlExecutor;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Told each recorded outcome (metrics). */
  readonly observe?: CallbackOutcomeObserver;
  /** The tenant's own signing secrets (`createTenantSecretSource`), or none. */
  readonly tenantSecret?: (tenantId: string) => Promise<readonly string[] | null>;
  readonly random?: () => number;
}

/** The outcome of one attempt, as recorded. */
type Outcome =
  | { readonly kind: 'sent'; readonly status: string }
  | { readonly kind: 'permanent' | 'transient'; readonly error: string; readonly status: string; readonly notBefore?: Date };

/** The callback sender: a periodic service that claims due deliveries and POSTs them. */
export interface CallbackSender {
  /** One claim and its sends; returns how many deliveries it attempted. */
  runOnce(): Promise<number>;
  start(): void;
  stop(timeoutMs?: number): Promise<boolean>;
  /** Closes the keep-alive connections. */
  close(): void;
}

/**
 * POSTs each claimed delivery to its tenant's callback URL as a Standard Webhook: the body is the
 * StatusEventV1 JSON exactly as published on `<prefix>.events`, `webhook-id` is the delivery's
 * event id (stable across retries), signed with the tenant's secrets (else NOTIFY_WEBHOOK_SECRET).
 * The same SSRF guard as the webhook channel checks the URL and every address it connects to, and
 * the same table classifies answers: 2xx delivered; 408/425/429/5xx, timeouts and network errors
 * transient, retried with the notifications' backoff until `maxAttempts`, then `failed`; other
 * answers, a refused target or no secret at all are `failed` at once. Nothing here touches a
 * notification: a failing callback costs its own rows and sending slots only.
 */
export function createCallbackSender(config: CallbackSenderConfig, deps: CallbackSenderDeps): CallbackSender {
  const guard = createTargetGuard({ allowCidrs: config.allowCidrs });
  const agent = createHttpAgent({ connectionsPerOrigin: 16, lookup: guard.lookup });
  const batchSize = config.batchSize ?? 32;
  const log = deps.logger.child({ component: 'callbacks' });
  const random = deps.random ?? Math.random;

  async function secretsFor(tenantId: string): Promise<readonly string[]> {
    const own = deps.tenantSecret ? await deps.tenantSecret(tenantId) : null;
    if (own && own.length > 0) return own;
    return config.signingSecret !== undefined ? [config.signingSecret] : [];
  }

  async function attempt(d: ClaimedCallbackDelivery): Promise<Outcome> {
    if (d.url === null) return { kind: 'permanent', error: 'the callback endpoint was removed', status: 'no_endpoint' };
    let url: URL;
    try {
      url = guard.checkUrl(d.url);
    } catch (err) {
      return { kind: 'permanent', error: (err as Error).message, status: 'ETARGETREFUSED' };
    }
    let secrets: readonly string[];
    try {
      secrets = await secretsFor(d.tenant_id);
    } catch (err) {
      return {
        kind: 'transient',
        error: `could not load the tenant's signing secret: ${(err as Error).message}`,
        status: 'secret_unavailable',
      };
    }
    if (secrets.length === 0) {
      return {
        kind: 'permanent',
        error: 'no signing secret: rotate one (POST /v1/webhook-secret/rotate) or set NOTIFY_WEBHOOK_SECRET',
        status: 'no_secret',
      };
    }
    const timestamp = Math.floor(deps.clock.now().getTime() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'notify-callbacks/1',
      [WEBHOOK_HEADERS.id]: d.event_id,
      [WEBHOOK_HEADERS.timestamp]: String(timestamp),
      [WEBHOOK_HEADERS.signature]: secrets.map((secret) => signWebhook({ secret, id: d.event_id, timestamp, body: d.payload })).join(' '),
    };
    const signal = AbortSignal.timeout(config.sendTimeoutMs);
    try {
      const res = await httpPost({ url, headers, body: d.payload, signal, agent, maxResponseBytes: 4096 });
      const status = String(res.status);
      const verdict = classifyCode('webhook', res.status);
      if (verdict === 'sent') return { kind: 'sent', status };
      if (verdict === 'permanent') return { kind: 'permanent', error: `callback receiver answered HTTP ${status}`, status };
      const notBefore = parseRetryAfter(res.headers['retry-after'], deps.clock.now());
      return { kind: 'transient', error: `callback receiver failed: HTTP ${status}`, status, ...(notBefore ? { notBefore } : {}) };
    } catch (err) {
      if (signal.aborted) return { kind: 'transient', error: 'timeout', status: 'timeout' };
      if (err instanceof TargetRefusedError) return { kind: 'permanent', error: err.message, status: err.code };
      const code = errorCode(err);
      return {
        kind: classifyErrno('webhook', code),
        error: `callback request failed: ${code ?? (err as Error).message}`,
        status: code ?? 'error',
      };
    }
  }

  async function deliver(d: ClaimedCallbackDelivery): Promise<void> {
    const outcome = await attempt(d);
    const now = deps.clock.now();
    const attempts = d.attempts + 1;
    const base = { id: d.id, attempts, status: outcome.status, now };
    if (outcome.kind === 'sent') {
      await callbackDeliveryRecord(deps.db, { ...base, state: 'delivered', nextAttemptAt: null, error: null });
      deps.observe?.('delivered', 1);
      return;
    }
    const retry = outcome.kind === 'transient' && attempts < config.retry.maxAttempts;
    const next = retry
      ? nextAttemptAt({
          now,
          attempt: attempts,
          baseMs: config.retry.baseDelayMs,
          maxMs: config.retry.maxDelayMs,
          jitter: config.retry.jitter,
          random,
          notBefore: outcome.notBefore,
        })
      : null;
    await callbackDeliveryRecord(deps.db, { ...base, state: retry ? 'pending' : 'failed', nextAttemptAt: next, error: outcome.error });
    deps.observe?.(retry ? 'retried' : 'failed', 1);
    // Ids and codes only: never the payload or the URL.
    log.debug({ tenantId: d.tenant_id, eventId: d.event_id, attempt: attempts, status: outcome.status, retry }, 'callback attempt failed');
    if (!retry)
      log.warn({ tenantId: d.tenant_id, eventId: d.event_id, attempts, status: outcome.status }, 'callback delivery failed for good');
  }

  const runOnce = async (): Promise<number> => {
    let total = 0;
    // Keep claiming while claims come back full; a round ends when the due rows are done.
    for (let i = 0; i < 100; i++) {
      const claimed = await callbackDeliveryClaim(deps.db, {
        now: deps.clock.now(),
        // Longer than one POST can take, so a live sender's claim never expires under it.
        leaseMs: config.sendTimeoutMs * 2 + 30_000,
        limit: batchSize,
        perTenant: config.perTenant ?? 4,
      });
      await Promise.all(claimed.map((d) => deliver(d)));
      total += claimed.length;
      if (claimed.length < batchSize) break;
    }
    return total;
  };

  const periodic = createPeriodicService({
    name: 'callback sender',
    intervalMs: config.pollIntervalMs ?? 250,
    run: runOnce,
    onError: (error) => log.warn({ err: errorSummary(error) }, 'callback sender round failed'),
  });

  return {
    runOnce,
    start: () => periodic.start(),
    stop: (timeoutMs) => periodic.stop(timeoutMs),
    close() {
      // Destroying never rejects; requests still in flight fail, as before.
      void agent.destroy();
    },
  };
}
