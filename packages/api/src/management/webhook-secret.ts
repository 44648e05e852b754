import { randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Database } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { sealSecret } from '@notify/runtime';
import { ProblemError } from '../problem.js';
import type { WebhookSecretRotated } from '../management-schemas.js';
import { webhookSecretRotate } from '../sql/webhook-secret-rotate.js';

/** How the API stores tenant signing secrets. */
export interface SecretsSettings {
  /** NOTIFY_SECRETS_KEY (32 bytes); without it the API refuses to store a secret. */
  readonly key: Buffer | undefined;
  /** NOTIFY_SECRET_ROTATION_GRACE_MS: how long the previous secret keeps signing. */
  readonly rotationGraceMs: number;
  /**
   * NOTIFY_WEBHOOK_SECRET, which signs the webhooks of a tenant without a secret of its own: a
   * tenant's first rotation keeps it signing for the grace period, as it keeps any previous secret.
   */
  readonly globalSecret?: string | undefined;
}

/** A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * Rotates the tenant's signing secret: a new one, sealed under NOTIFY_SECRETS_KEY, signs from now
 * (within the dispatcher's 30 s cache); the previous ones keep signing for `graceMs` (default
 * NOTIFY_SECRET_ROTATION_GRACE_MS; 0 ends them now, within the same cache). The
 * raw secret is returned here only, never logged and never shown again. Without the key: 503
 * `secrets_key_missing`, saying why, and nothing is stored.
 */
export async function rotateWebhookSecret(
  db: Kysely<Database>,
  settings: SecretsSettings,
  tenantId: string,
  now: Date,
  graceMs: number = settings.rotationGraceMs,
): Promise<WebhookSecretRotated> {
  const key = settings.key;
  if (!key) {
    throw new ProblemError(
      'secrets_key_missing',
      'this service refuses to store a signing secret unencrypted: set NOTIFY_SECRETS_KEY (32 bytes, e.g. `openssl rand -base64 32`) on the API role and the dispatchers',
    );
  }
  const secret = generateWebhookSecret();
  const graceUntil = new Date(now.getTime() + graceMs);
  const result = await db.transaction().execute((trx) =>
    webhookSecretRotate(fromKysely(trx), {
      tenantId,
      sealed: sealSecret(key, secret, tenantId),
      sealLegacy: (plain) => sealSecret(key, plain, tenantId),
      sealedGlobal: settings.globalSecret === undefined ? undefined : sealSecret(key, settings.globalSecret, tenantId),
      now,
      graceUntil,
    }),
  );
  return {
    id: result.id,
    secret,
    created_at: now.toISOString(),
    previous_expires_at: result.previousExpiresAt ? result.previousExpiresAt.toISOString() : null,
  };
}
