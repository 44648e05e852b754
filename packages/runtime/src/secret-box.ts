import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Sealing of secrets at rest (tenant webhook signing secrets): AES-256-GCM from `node:crypto`
 * under the 32-byte key of NOTIFY_SECRETS_KEY. A sealed value is
 * `v1.<iv>.<tag>.<ciphertext>` (base64url, 96-bit random IV, 128-bit tag). The caller's `context`
 * (the tenant id) is authenticated as additional data, so a sealed value moved to another tenant
 * does not open.
 */

const VERSION = 'v1';

/** A NOTIFY_SECRETS_KEY that is not 32 bytes in base64 or hex. `code` is stable. */
export class SecretsKeyError extends Error {
  readonly code = 'secrets_key_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'SecretsKeyError';
  }
}

/**
 * The key from NOTIFY_SECRETS_KEY's value: 32 bytes as base64 (44 characters, e.g.
 * `openssl rand -base64 32`) or hex (64 characters). Throws `SecretsKeyError` saying which form it wants.
 */
export function parseSecretsKey(value: string): Buffer {
  const trimmed = value.trim();
  const key = /^[0-9a-fA-F]{64}$/.test(trimmed) ? Buffer.from(trimmed, 'hex') : Buffer.from(trimmed, 'base64');
  if (key.length !== 32 || (!/^[0-9a-fA-F]{64}$/.test(trimmed) && !/^[A-Za-z0-9+/_-]{42,43}=?$/.test(trimmed))) {
    throw new SecretsKeyError('must be 32 bytes as base64 (openssl rand -base64 32) or 64 hex characters');
  }
  return key;
}

/** GCM's full authentication tag; `openSecret` accepts no shorter one. */
const TAG_BYTES = 16;

/** Seals `plaintext` under `key`, bound to `context`. */
export function sealSecret(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context, 'utf8'));
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
}

/** Opens a sealed value. Throws when the key or context is wrong or the value was altered (the message says which form failed, never the value). */
export function openSecret(key: Buffer, sealed: string, context: string): string {
  const [version, iv, tag, ct, ...rest] = sealed.split('.');
  if (version !== VERSION || iv === undefined || tag === undefined || ct === undefined || rest.length > 0) {
    throw new Error('the sealed secret is not in the v1 form');
  }
  // The whole 16-byte tag, always: GCM accepts shorter tags, which are easier to forge.
  const tagBytes = Buffer.from(tag, 'base64url');
  if (tagBytes.length !== TAG_BYTES) throw new Error('the sealed secret is not in the v1 form');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
  decipher.setAAD(Buffer.from(context, 'utf8'));
  decipher.setAuthTag(tagBytes);
  try {
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  } catch (err) {
    throw new Error('the sealed secret does not open with NOTIFY_SECRETS_KEY (another key, or altered)', { cause: err });
  }
}
