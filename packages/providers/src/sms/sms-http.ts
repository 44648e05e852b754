import type { Clock, Logger } from '@notify/runtime';
import { classifyCode, classifyErrno, errorCode, parseRetryAfter } from '../classify.js';
import { DEFAULT_CONNECTIONS_PER_ORIGIN, HttpTimeoutError, createHttpAgent, httpPost } from '../http-post.js';
import type { Delivery, Provider, SendResult } from '../provider.js';
import { originOf } from '../endpoints/endpoint.js';

/** Options of `createSmsHttpProvider`. */
export interface SmsHttpProviderOptions {
  /**
   * The gateway's base URL (NOTIFY_SMS_URL), e.g. `https://api.twilio.com/2010-04-01`.
   * Messages are POSTed to `<base>/Accounts/<accountId>/Messages.json`, or `<base>/Messages.json`
   * without an account id.
   */
  readonly baseUrl: string;
  /** Basic-auth user and account path segment (NOTIFY_SMS_ACCOUNT_ID). */
  readonly accountId?: string | undefined;
  /** Basic-auth password (NOTIFY_SMS_AUTH_TOKEN). */
  readonly authToken?: string | undefined;
  /** Sender number or id (NOTIFY_SMS_FROM). */
  readonly from?: string | undefined;
  /** The adapter's own ceiling per attempt, on top of the dispatcher's signal. Default 30 s. */
  readonly timeoutMs?: number;
  /** Response bytes read at most. Default 64 KiB. */
  readonly maxResponseBytes?: number;
  /** Open connections to the gateway at most (NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN). Default 64. */
  readonly connectionsPerOrigin?: number;
}

/** Dependencies of `createSmsHttpProvider`. */
export interface SmsHttpProviderDeps {
  readonly clock: Clock;
  readonly logger: Logger;
}

/** The gateway's error code from a Twilio-style JSON error body (`{"code": 21211, …}`), if any. */
function gatewayCode(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { code?: unknown };
    if (typeof parsed.code === 'number' || (typeof parsed.code === 'string' && /^[\w.-]{1,40}$/.test(parsed.code))) {
      return String(parsed.code);
    }
  } catch {
    // Not JSON: the HTTP status says enough.
  }
  return undefined;
}

/**
 * The SMS channel: a Twilio-style HTTP gateway. One form POST (`To`, `From`, `Body`) per
 * message, basic auth with the account id and token, `Idempotency-Key: <notification id>`.
 *
 * - 2xx sent; 400, 404, 422 and other 4xx permanent; 408, 425, 429 and 5xx transient with
 *   `Retry-After` honoured; 401/403/407 transient (our credentials: an operator can fix them);
 *   connection errors transient (CLASSIFICATION.sms).
 * - The error names the HTTP status and the gateway's error code, never the gateway's message
 *   (it may quote the phone number).
 */
export function createSmsHttpProvider(options: SmsHttpProviderOptions, deps: SmsHttpProviderDeps): Provider {
  const base = options.baseUrl.replace(/\/+$/, '');
  const endpoint = new URL(
    options.accountId !== undefined ? `${base}/Accounts/${encodeURIComponent(options.accountId)}/Messages.json` : `${base}/Messages.json`,
  );
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:')
    throw new Error(`NOTIFY_SMS_URL: expected http: or https:, got ${endpoint.protocol}`);
  const authorization =
    options.accountId !== undefined || options.authToken !== undefined
      ? `Basic ${Buffer.from(`${options.accountId ?? ''}:${options.authToken ?? ''}`).toString('base64')}`
      : undefined;
  const timeoutMs = options.timeoutMs ?? 30_000;
  const maxResponseBytes = options.maxResponseBytes ?? 64 * 1024;
  const agent = createHttpAgent({ connectionsPerOrigin: options.connectionsPerOrigin ?? DEFAULT_CONNECTIONS_PER_ORIGIN });
  const log = deps.logger.child({ provider: 'sms-http' });

  async function send(delivery: Delivery, signal: AbortSignal): Promise<SendResult> {
    if (signal.aborted) return { kind: 'transient', error: 'timeout', providerStatus: 'timeout' };
    const form = new URLSearchParams({ To: delivery.to, Body: delivery.body });
    if (options.from !== undefined) form.set('From', options.from);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      'idempotency-key': delivery.id,
    };
    if (authorization) headers.authorization = authorization;
    try {
      const res = await httpPost({ url: endpoint, headers, body: form.toString(), signal, timeoutMs, agent, maxResponseBytes });
      const status = String(res.status);
      const verdict = classifyCode('sms', res.status);
      log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status }, 'sms gateway answered');
      if (verdict === 'sent') return { kind: 'sent', providerStatus: status };
      const code = gatewayCode(res.body);
      const error = `sms gateway answered HTTP ${status}${code ? ` (gateway code ${code})` : ''}`;
      if (verdict === 'permanent') return { kind: 'permanent', error, providerStatus: status };
      const notBefore = parseRetryAfter(res.headers['retry-after'], deps.clock.now());
      return { kind: 'transient', error, providerStatus: status, ...(notBefore ? { notBefore } : {}) };
    } catch (err) {
      if (signal.aborted || err instanceof HttpTimeoutError) return { kind: 'transient', error: 'timeout', providerStatus: 'timeout' };
      const code = errorCode(err);
      log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status: code }, 'sms gateway unreachable');
      return {
        kind: classifyErrno('sms', code),
        error: `sms gateway request failed: ${code ?? (err as Error).message}`,
        providerStatus: code ?? 'error',
      };
    }
  }

  return {
    channel: 'sms',
    ...originOf(options.baseUrl),
    send,
    async close() {
      await agent.destroy();
    },
  };
}
