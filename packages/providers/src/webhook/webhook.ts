import type { Clock, Logger } from '@notify/runtime';
import { classifyCode, classifyErrno, errorCode, parseRetryAfter } from '../classify.js';
import { DEFAULT_CONNECTIONS_PER_ORIGIN, HttpTimeoutError, createHttpAgent, httpPost } from '../http-post.js';
import { memoizeByString } from '../memo.js';
import type { Delivery, Provider, SendResult } from '../provider.js';
import { type Resolver, TargetRefusedError, createTargetGuard } from './ssrf.js';
import { WEBHOOK_HEADERS, signWebhook, webhookSecretKey } from './signature.js';

/** The JSON body of every webhook POST (snake_case, like the API). */
export interface WebhookPayload {
  /** The notification id; equals the `webhook-id` header and is stable across retries. */
  readonly id: string;
  readonly tenant_id: string;
  /** The body, or the rendered template. */
  readonly body: string;
  readonly data: Record<string, unknown> | null;
  readonly metadata: Record<string, string>;
  /** 1 for the first attempt. */
  readonly attempt: number;
  /** When the notification was created (ISO 8601). */
  readonly created_at: string;
  /** When this attempt was sent (ISO 8601); equals `webhook-timestamp`. */
  readonly timestamp: string;
}

/** Options of `createWebhookProvider`. */
export interface WebhookProviderOptions {
  /** CIDRs targets may resolve to although the SSRF policy refuses them (NOTIFY_WEBHOOK_ALLOW_CIDRS). */
  readonly allowCidrs?: readonly string[];
  /** The global signing secret (NOTIFY_WEBHOOK_SECRET); a tenant's own secret overrides it. */
  readonly signingSecret?: string | undefined;
  /**
   * The tenant's own signing secrets (several during a rotation's grace period: each signs, in one
   * header), or null/undefined for none. A throw (database down, no NOTIFY_SECRETS_KEY) makes the
   * attempt transient: we never send unsigned by accident.
   */
  readonly tenantSecret?: (tenantId: string) => Promise<string | readonly string[] | null | undefined>;
  /** Response bytes read at most (the rest is discarded with the connection). Default 64 KiB. */
  readonly maxResponseBytes?: number;
  /** The adapter's own ceiling per attempt, on top of the dispatcher's signal. Default 30 s. */
  readonly timeoutMs?: number;
  /** Name resolution for targets (tests inject hostile answers). */
  readonly resolver?: Resolver;
  /** `user-agent` header. */
  readonly userAgent?: string;
  /** Open connections per target origin at most (NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN). Default 64. */
  readonly connectionsPerOrigin?: number;
}

/** Dependencies of `createWebhookProvider`. */
export interface WebhookProviderDeps {
  readonly clock: Clock;
  readonly logger: Logger;
}

const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024;

function timeoutResult(): SendResult {
  return { kind: 'transient', error: 'timeout', providerStatus: 'timeout' };
}

/**
 * The webhook channel: POSTs the notification as JSON to its `to` URL.
 *
 * - Signed the Standard Webhooks way when a secret applies (tenant's, else global):
 *   `webhook-id` = notification id, `webhook-timestamp`, `webhook-signature: v1,…`.
 * - SSRF-safe (see ssrf.ts): a refused target is a permanent failure ("webhook target refused …").
 * - Redirects are never followed: a 3xx is a permanent failure that names the status.
 * - 2xx sent; 408/425/429 and 5xx transient with `Retry-After` honoured; other 4xx permanent;
 *   timeouts, resets and DNS failures transient (CLASSIFICATION.webhook).
 * - Connections are kept alive per target origin, at most `connectionsPerOrigin` each (they were
 *   checked when opened).
 */
export function createWebhookProvider(options: WebhookProviderOptions, deps: WebhookProviderDeps): Provider {
  const guard = createTargetGuard({ allowCidrs: options.allowCidrs ?? [], ...(options.resolver ? { resolver: options.resolver } : {}) });
  if (options.signingSecret !== undefined) webhookSecretKey(options.signingSecret); // fail at start, not per send
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const userAgent = options.userAgent ?? 'notify-webhooks/1';
  // Every new connection resolves its host through the guard's checked lookup.
  const agent = createHttpAgent({
    connectionsPerOrigin: options.connectionsPerOrigin ?? DEFAULT_CONNECTIONS_PER_ORIGIN,
    lookup: guard.lookup,
  });
  const log = deps.logger.child({ provider: 'webhook' });
  /**
   * Targets that passed `guard.checkUrl`, by URL string: the check depends on the string alone
   * (the host's addresses are checked when a connection opens), and most deliveries go to a few
   * URLs. A refused URL throws and is checked again next time. Only read (by `httpPost`), never changed.
   */
  const checkUrl = memoizeByString((target) => guard.checkUrl(target));

  async function secretsFor(tenantId: string): Promise<readonly string[]> {
    const own = options.tenantSecret ? await options.tenantSecret(tenantId) : undefined;
    if (typeof own === 'string') return [own];
    if (own && own.length > 0) return own;
    return options.signingSecret !== undefined ? [options.signingSecret] : [];
  }

  async function send(delivery: Delivery, signal: AbortSignal): Promise<SendResult> {
    if (signal.aborted) return timeoutResult();
    let url: URL;
    try {
      url = checkUrl(delivery.to);
    } catch (err) {
      log.warn({ notificationId: delivery.id, reason: (err as Error).message }, 'webhook target refused');
      return { kind: 'permanent', error: (err as Error).message, providerStatus: 'ETARGETREFUSED' };
    }
    let secrets: readonly string[];
    try {
      secrets = await secretsFor(delivery.tenantId);
    } catch (err) {
      return {
        kind: 'transient',
        error: `could not load the tenant's webhook signing secret: ${(err as Error).message}`,
        providerStatus: 'secret_unavailable',
      };
    }
    const now = deps.clock.now();
    const timestamp = Math.floor(now.getTime() / 1000);
    const payload: WebhookPayload = {
      id: delivery.id,
      tenant_id: delivery.tenantId,
      body: delivery.body,
      data: delivery.data,
      metadata: delivery.metadata,
      attempt: delivery.attempt,
      created_at: delivery.createdAt.toISOString(),
      timestamp: new Date(timestamp * 1000).toISOString(),
    };
    const body = JSON.stringify(payload);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': userAgent,
      [WEBHOOK_HEADERS.id]: delivery.id,
      [WEBHOOK_HEADERS.timestamp]: String(timestamp),
    };
    if (secrets.length > 0) {
      try {
        // Standard Webhooks: several space-separated signatures; a receiver accepts any one it can verify.
        headers[WEBHOOK_HEADERS.signature] = secrets.map((secret) => signWebhook({ secret, id: delivery.id, timestamp, body })).join(' ');
      } catch (err) {
        return {
          kind: 'permanent',
          error: `the tenant's webhook signing secret is unusable: ${(err as Error).message}`,
          providerStatus: 'bad_secret',
        };
      }
    }
    try {
      const res = await httpPost({ url, headers, body, signal, timeoutMs, agent, maxResponseBytes });
      const status = String(res.status);
      const verdict = classifyCode('webhook', res.status);
      log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status }, 'webhook answered');
      if (verdict === 'sent') return { kind: 'sent', providerStatus: status };
      if (res.status >= 300 && res.status < 400) {
        return {
          kind: 'permanent',
          error: `webhook receiver answered HTTP ${status} (a redirect); redirects are never followed, register the final URL`,
          providerStatus: status,
        };
      }
      if (verdict === 'permanent')
        return { kind: 'permanent', error: `webhook receiver rejected the notification: HTTP ${status}`, providerStatus: status };
      const notBefore = parseRetryAfter(res.headers['retry-after'], deps.clock.now());
      return {
        kind: 'transient',
        error: `webhook receiver failed: HTTP ${status}`,
        providerStatus: status,
        ...(notBefore ? { notBefore } : {}),
      };
    } catch (err) {
      if (signal.aborted || err instanceof HttpTimeoutError) return timeoutResult();
      const code = errorCode(err);
      if (err instanceof TargetRefusedError) {
        log.warn({ notificationId: delivery.id, reason: err.detail }, 'webhook target refused');
        return { kind: 'permanent', error: err.message, providerStatus: err.code };
      }
      const verdict = classifyErrno('webhook', code);
      log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status: code }, 'webhook failed');
      return { kind: verdict, error: `webhook request failed: ${code ?? (err as Error).message}`, providerStatus: code ?? 'error' };
    }
  }

  return {
    channel: 'webhook',
    send,
    async close() {
      await agent.destroy();
    },
  };
}
