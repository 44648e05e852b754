import { timingSafeEqual } from 'node:crypto';
import { WEBHOOK_HEADERS, signWebhook } from '../webhook/signature.js';

/** Input of `verifyWebhookSignature`. */
export interface WebhookVerifyInput {
  /** The shared secret (`whsec_…` or raw), as configured on the sending side. */
  readonly secret: string;
  /** The request headers; names are matched case-insensitively. */
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** The raw request body exactly as received (not re-serialized JSON). */
  readonly body: string;
  /** The receiver's current time (pass `new Date()`). */
  readonly now: Date;
  /** Largest accepted difference between `now` and `webhook-timestamp`, in seconds. Default 300. */
  readonly toleranceSeconds?: number;
}

/** The result of a verification: the message id to dedupe on, or why it failed. */
export type WebhookVerification =
  { readonly ok: true; readonly id: string; readonly timestamp: Date } | { readonly ok: false; readonly reason: string };

function header(headers: WebhookVerifyInput['headers'], name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== name) continue;
    return typeof value === 'string' ? value : value?.[0];
  }
  return undefined;
}

/**
 * For our tests (receivers use the `standardwebhooks` library): checks a Standard Webhooks signature. Accepts when any `v1` signature in the
 * header matches (constant-time compare) and the timestamp is within the tolerance, which
 * stops replays of old captured requests. Dedupe on the returned `id`: it is stable across retries.
 */
export function verifyWebhookSignature(input: WebhookVerifyInput): WebhookVerification {
  const id = header(input.headers, WEBHOOK_HEADERS.id);
  const ts = header(input.headers, WEBHOOK_HEADERS.timestamp);
  const sig = header(input.headers, WEBHOOK_HEADERS.signature);
  if (!id || !ts || !sig) return { ok: false, reason: 'missing webhook-id, webhook-timestamp or webhook-signature header' };
  if (!/^\d{1,12}$/.test(ts)) return { ok: false, reason: 'webhook-timestamp is not whole seconds since the epoch' };
  const timestamp = Number(ts);
  const tolerance = input.toleranceSeconds ?? 300;
  if (Math.abs(input.now.getTime() / 1000 - timestamp) > tolerance) {
    return { ok: false, reason: `webhook-timestamp is more than ${tolerance} s away from now` };
  }
  let expected: Buffer;
  try {
    expected = Buffer.from(signWebhook({ secret: input.secret, id, timestamp, body: input.body }).slice(3), 'base64');
  } catch (err) {
    return { ok: false, reason: (err as Error).message };
  }
  for (const candidate of sig.split(' ')) {
    const [version, value] = candidate.split(',', 2);
    if (version !== 'v1' || value === undefined) continue;
    const given = Buffer.from(value, 'base64');
    if (given.length === expected.length && timingSafeEqual(given, expected)) {
      return { ok: true, id, timestamp: new Date(timestamp * 1000) };
    }
  }
  return { ok: false, reason: 'no v1 signature matches' };
}
