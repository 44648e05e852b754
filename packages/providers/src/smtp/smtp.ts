import nodemailer from 'nodemailer';
import { errorMessage, type Logger } from '@notify/runtime';
import { classifyCode, classifyErrno, errorCode } from '../classify.js';
import type { Delivery, Provider, SendResult } from '../provider.js';
import { originOf } from '../endpoints/endpoint.js';

/** Options of `createSmtpProvider`. */
export interface SmtpProviderOptions {
  /** `smtp://[user:pass@]host[:port]` (STARTTLS when offered) or `smtps://…` (TLS from the start). */
  readonly url: string;
  /** The From address (NOTIFY_SMTP_FROM). */
  readonly from: string;
  /** Right-hand side of the Message-ID; default: the domain of `from`. */
  readonly messageIdDomain?: string;
  /** Pooled connections at most (NOTIFY_SMTP_POOL_SIZE). Default 5. */
  readonly poolSize?: number;
  /** Messages per pooled connection before it is recycled. Default 100. */
  readonly maxMessagesPerConnection?: number;
  /** nodemailer's own timeouts, a backstop under the dispatcher's per-attempt signal. */
  readonly connectionTimeoutMs?: number;
  readonly greetingTimeoutMs?: number;
  readonly socketTimeoutMs?: number;
  /** Verify the server's TLS certificate (default true). */
  readonly rejectUnauthorized?: boolean;
}

/** Dependencies of `createSmtpProvider`. */
export interface SmtpProviderDeps {
  readonly logger: Logger;
}

/**
 * The stable Message-ID of a notification: `<id@domain>`. The same on every attempt, so a
 * duplicate sent after a crash can be recognised by the receiving side.
 */
export function messageIdFor(notificationId: string, domain: string): string {
  return `<${notificationId}@${domain}>`;
}

interface SmtpError {
  code?: string;
  responseCode?: number;
  response?: string;
  command?: string;
  message?: string;
}

// "550 5.1.1 <x@y>: Recipient address rejected" → "550 5.1.1"
const REPLY = /^(\d{3})[ -](\d\.\d{1,3}\.\d{1,3})?/;

/** `550` or `550 5.1.1` (reply code with the enhanced status code when the server sent one). */
function replyStatus(code: number, response: string | undefined): string {
  const enhanced = response ? REPLY.exec(response)?.[2] : undefined;
  return enhanced ? `${code} ${enhanced}` : String(code);
}

// nodemailer replaces a socket error's code with its own wrapper code; the errno stays in the message.
const WRAPPER_CODES = new Set(['ESOCKET', 'ECONNECTION']);

/** The most specific error code: `ECONNREFUSED` rather than nodemailer's `ESOCKET` around it. */
function socketErrno(err: SmtpError): string | undefined {
  const code = errorCode(err);
  if (code === undefined || !WRAPPER_CODES.has(code)) return code;
  return /\b(E[A-Z][A-Z0-9_]{2,})\b/.exec(err.message ?? '')?.[1] ?? code;
}

function firstLine(text: string, max = 200): string {
  const line = withoutAddresses(text.split(/\r?\n/, 1)[0] ?? '');
  return line.length > max ? `${line.slice(0, max)}…` : line;
}

/** Anything shaped like an email address, in angle brackets or bare. */
const ADDRESS = /<[^<>\s]*@[^<>\s]*>|[^\s<>"'(),;:[\]]+@[^\s<>"'(),;:[\]]+/g;

/**
 * A server's reply without the addresses it quotes (`550 5.1.1 <ada@example.com>: Recipient address
 * rejected` is the usual form): the text becomes the attempt's error, `last_error`, and the
 * `notification.*` events other teams read, which never carry recipients (docs/message-contract.md).
 */
function withoutAddresses(text: string): string {
  return text.replace(ADDRESS, '<address>');
}

/**
 * The email channel: SMTP through a pooled nodemailer transport.
 *
 * - Message-ID `<notification id@domain>` (stable across attempts); the notification id is
 *   also sent as `X-Notification-Id`.
 * - Reply codes: 2xx sent, 4xx transient (421, 450, 451, 452…), 5xx permanent (550, 553, 554…)
 *   except authentication failures (530, 534, 535, 538: our configuration, transient);
 *   connection errors transient. `providerStatus` is e.g. "550 5.1.1" or "ECONNREFUSED".
 * - The dispatcher's abort ends the attempt at once (transient "timeout"); nodemailer cannot
 *   cancel a message mid-transaction, so the message may still go out: the stable Message-ID
 *   makes that duplicate recognisable.
 * - Sends `delivery.html` as the text/html alternative when present.
 */
export function createSmtpProvider(options: SmtpProviderOptions, deps: SmtpProviderDeps): Provider {
  const url = new URL(options.url);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:')
    throw new Error(`NOTIFY_SMTP_URL: expected smtp: or smtps:, got ${url.protocol}`);
  const secure = url.protocol === 'smtps:';
  const domain = options.messageIdDomain ?? /@([^@>\s]+)>?$/.exec(options.from)?.[1] ?? 'notify.invalid';
  const transport = nodemailer.createTransport({
    pool: true,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? (secure ? 465 : 25) : Number(url.port),
    secure,
    ...(url.username !== '' ? { auth: { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } } : {}),
    maxConnections: options.poolSize ?? 5,
    maxMessages: options.maxMessagesPerConnection ?? 100,
    connectionTimeout: options.connectionTimeoutMs ?? 10_000,
    greetingTimeout: options.greetingTimeoutMs ?? 10_000,
    socketTimeout: options.socketTimeoutMs ?? 30_000,
    tls: { rejectUnauthorized: options.rejectUnauthorized ?? true },
    // nodemailer's own logger would log envelopes (recipients): keep it off.
    logger: false,
    debug: false,
  });
  const log = deps.logger.child({ provider: 'smtp' });

  function classify(delivery: Delivery, err: SmtpError): SendResult {
    if (typeof err.responseCode === 'number') {
      const code = err.responseCode;
      const providerStatus = replyStatus(code, err.response);
      const verdict = classifyCode('email', code);
      log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status: providerStatus, command: err.command }, 'smtp rejected');
      const error = `SMTP ${code}${err.command ? ` after ${err.command}` : ''}: ${firstLine(err.response ?? err.message ?? '')}`;
      // A 2xx inside an error (should not happen) is not a success we can trust: retry it.
      return verdict === 'permanent' ? { kind: 'permanent', error, providerStatus } : { kind: 'transient', error, providerStatus };
    }
    const code = socketErrno(err);
    const verdict = classifyErrno('email', code);
    log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status: code }, 'smtp failed');
    return { kind: verdict, error: `SMTP ${code ?? 'error'}: ${firstLine(errorMessage(err))}`, providerStatus: code ?? 'error' };
  }

  async function send(delivery: Delivery, signal: AbortSignal): Promise<SendResult> {
    if (signal.aborted) return { kind: 'transient', error: 'timeout', providerStatus: 'timeout' };
    const sending = transport
      .sendMail({
        from: options.from,
        to: delivery.to,
        subject: delivery.subject ?? '',
        text: delivery.body,
        ...(delivery.html ? { html: delivery.html } : {}),
        messageId: messageIdFor(delivery.id, domain),
        headers: { 'X-Notification-Id': delivery.id },
      })
      .then(
        (info): SendResult => {
          const status = typeof info.response === 'string' ? (REPLY.exec(info.response)?.[1] ?? '250') : '250';
          log.debug({ notificationId: delivery.id, attempt: delivery.attempt, status }, 'smtp accepted');
          return { kind: 'sent', providerStatus: status };
        },
        (err: SmtpError) => classify(delivery, err),
      );
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<SendResult>((resolve) => {
      onAbort = () => resolve({ kind: 'transient', error: 'timeout', providerStatus: 'timeout' });
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([sending, aborted]);
    } finally {
      if (onAbort) signal.removeEventListener('abort', onAbort);
    }
  }

  return {
    channel: 'email',
    ...originOf(options.url),
    send,
    async close() {
      transport.close();
    },
  };
}
