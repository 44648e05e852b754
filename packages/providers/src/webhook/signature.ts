import { type KeyObject, createHmac, createSecretKey } from 'node:crypto';
import { memoizeByString } from '../memo.js';

/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com): the signed content is
 * `${webhook-id}.${webhook-timestamp}.${body}`, the signature HMAC-SHA256 with the secret,
 * sent as `webhook-signature: v1,<base64>` (several space-separated during a key rotation).
 *
 * Receivers verify with the `standardwebhooks` library (docs/providers.md); a test proves that it
 * accepts what `signWebhook` sends. `verifyWebhookSignature` in `@notify/providers/testing` is the
 * same check for our own tests.
 */

/** The three headers a signed webhook carries, lower-case. */
export const WEBHOOK_HEADERS = {
  id: 'webhook-id',
  timestamp: 'webhook-timestamp',
  signature: 'webhook-signature',
} as const;

const WHSEC_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/**
 * The HMAC key for a secret: `whsec_<base64>` is base64-decoded (the Standard Webhooks form);
 * anything else is taken as raw UTF-8 bytes. Throws on an empty secret or bad base64.
 */
export function webhookSecretKey(secret: string): Buffer {
  if (secret.startsWith(WHSEC_PREFIX)) {
    const encoded = secret.slice(WHSEC_PREFIX.length);
    if (!BASE64.test(encoded) || encoded.length % 4 !== 0) {
      throw new Error('the webhook signing secret starts with whsec_ but the rest is not base64');
    }
    return Buffer.from(encoded, 'base64');
  }
  if (secret === '') throw new Error('the webhook signing secret is empty');
  return Buffer.from(secret, 'utf8');
}

/** What is signed. `timestamp` is in whole seconds since the epoch (the header's value). */
export interface WebhookSignInput {
  readonly secret: string;
  readonly id: string;
  readonly timestamp: number;
  readonly body: string;
}

/**
 * The HMAC key of a secret, made once per secret (a tenant signs every delivery with the same few):
 * no base64 check, decode and key import per send. A bad secret throws every time (not remembered).
 */
const hmacKey = memoizeByString((secret): KeyObject => createSecretKey(webhookSecretKey(secret)), 1_000);

/** The `webhook-signature` header value: `v1,<base64 HMAC-SHA256 of id.timestamp.body>`. */
export function signWebhook(input: WebhookSignInput): string {
  const mac = createHmac('sha256', hmacKey(input.secret)).update(`${input.id}.${input.timestamp}.${input.body}`).digest('base64');
  return `v1,${mac}`;
}
