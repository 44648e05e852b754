import type { Channel } from '@notify/outbox';

/** What one provider answer means for the notification. */
export type Verdict = 'sent' | 'permanent' | 'transient';

/**
 * How one channel's provider answers map onto verdicts. Lookup order: the exact `codes` entry,
 * then the `classes` entry for the first digit (2xx, 4xx, 5xx…), then transient. Error codes
 * (errnos such as `ECONNREFUSED`, nodemailer codes such as `EENVELOPE`) go through `errnos`,
 * then transient: an answer we do not understand is never a reason to give up.
 */
export interface ClassificationTable {
  /** HTTP statuses (webhook, sms) or SMTP reply codes (email) with their own verdict. */
  readonly codes: Readonly<Record<number, Verdict>>;
  /** Verdict by first digit of the status or reply code. */
  readonly classes: Readonly<Record<number, Verdict>>;
  /** Verdict by error code, for failures without a status (connection, DNS, protocol). */
  readonly errnos: Readonly<Record<string, Exclude<Verdict, 'sent'>>>;
}

// Network failures are worth another attempt on every channel: the peer may come back.
const NETWORK_ERRNOS = {
  ECONNREFUSED: 'transient',
  ECONNRESET: 'transient',
  ECONNABORTED: 'transient',
  EPIPE: 'transient',
  ETIMEDOUT: 'transient',
  EHOSTUNREACH: 'transient',
  EHOSTDOWN: 'transient',
  ENETUNREACH: 'transient',
  ENETDOWN: 'transient',
  ENOTFOUND: 'transient',
  EAI_AGAIN: 'transient',
  ABORT_ERR: 'transient',
  ERR_STREAM_PREMATURE_CLOSE: 'transient',
  HPE_INVALID_CONSTANT: 'transient',
} as const;

/**
 * The classification tables, one per channel. docs/providers.md shows the same tables.
 *
 * - webhook: 2xx sent; 3xx permanent (redirects are never followed); 4xx permanent except 408,
 *   425 and 429; 5xx transient. A refused target (`ETARGETREFUSED`, SSRF policy) is permanent.
 * - sms (Twilio-style gateway): as webhook, plus 401/403/407 transient: they mean our
 *   credentials are wrong, which an operator can fix before the notification's retries run out.
 * - email (SMTP reply codes): 2xx sent, 4xx transient (421, 450, 451, 452…), 5xx permanent
 *   (550, 553, 554…) except 530/534/535/538 (authentication: our configuration, fixable).
 *   nodemailer's `EENVELOPE` / `EMESSAGE` without a reply code mean the message itself is
 *   unacceptable (permanent); `EAUTH` is configuration (transient).
 */
export const CLASSIFICATION: { readonly [C in Channel]: ClassificationTable } = {
  webhook: {
    codes: { 408: 'transient', 425: 'transient', 429: 'transient' },
    classes: { 2: 'sent', 3: 'permanent', 4: 'permanent', 5: 'transient' },
    errnos: { ...NETWORK_ERRNOS, ETARGETREFUSED: 'permanent', ERR_INVALID_URL: 'permanent' },
  },
  sms: {
    codes: { 401: 'transient', 403: 'transient', 407: 'transient', 408: 'transient', 425: 'transient', 429: 'transient' },
    classes: { 2: 'sent', 3: 'permanent', 4: 'permanent', 5: 'transient' },
    errnos: { ...NETWORK_ERRNOS },
  },
  email: {
    codes: { 530: 'transient', 534: 'transient', 535: 'transient', 538: 'transient' },
    classes: { 2: 'sent', 4: 'transient', 5: 'permanent' },
    errnos: {
      ...NETWORK_ERRNOS,
      ECONNECTION: 'transient',
      ESOCKET: 'transient',
      EDNS: 'transient',
      ETLS: 'transient',
      EPROTOCOL: 'transient',
      EAUTH: 'transient',
      ENOAUTH: 'transient',
      EENVELOPE: 'permanent',
      EMESSAGE: 'permanent',
    },
  },
};

/** The verdict for an HTTP status or SMTP reply code on `channel`. Unknown → transient. */
export function classifyCode(channel: Channel, code: number): Verdict {
  const table = CLASSIFICATION[channel];
  return table.codes[code] ?? table.classes[Math.floor(code / 100)] ?? 'transient';
}

/** The verdict for an error code (errno or client code) on `channel`. Unknown or missing → transient. */
export function classifyErrno(channel: Channel, errno: string | undefined): Exclude<Verdict, 'sent'> {
  if (errno === undefined) return 'transient';
  return CLASSIFICATION[channel].errnos[errno] ?? 'transient';
}

/** `Retry-After` values above this are ignored as nonsense (a year); the dispatcher caps delays anyway. */
const MAX_RETRY_AFTER_MS = 365 * 86_400_000;

/**
 * Parses a `Retry-After` header: delay-seconds (`"120"`) or an HTTP date
 * (`"Wed, 21 Oct 2015 07:28:00 GMT"`). Returns the instant not to retry before, or undefined
 * when the header is absent, malformed or already past. `now` is injected (the clock port).
 */
export function parseRetryAfter(value: string | readonly string[] | undefined | null, now: Date): Date | undefined {
  const raw: string | undefined | null = typeof value === 'string' || value == null ? value : value[0];
  if (typeof raw !== 'string') return undefined;
  const text = raw.trim();
  if (text === '') return undefined;
  if (/^\d+$/.test(text)) {
    const ms = Number(text) * 1000;
    if (!Number.isSafeInteger(ms) || ms > MAX_RETRY_AFTER_MS) return undefined;
    return ms === 0 ? undefined : new Date(now.getTime() + ms);
  }
  // RFC 9110 HTTP-date: IMF-fixdate (and the obsolete forms Date.parse also reads). Require a
  // letter first so that things like "1.5" or "-3" are not read as dates.
  if (!/^[A-Za-z]/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  const delta = at - now.getTime();
  if (delta <= 0 || delta > MAX_RETRY_AFTER_MS) return undefined;
  return new Date(at);
}

/**
 * The error code of a thrown error or its cause chain (`code` of a Node system error,
 * nodemailer error or undici cause), or undefined.
 */
export function errorCode(err: unknown): string | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
