import type { Clock } from '@notify/runtime';
import { sealSecret } from '@notify/runtime';
import { fromKysely } from '@notify/outbox';
import { webhookSecretSealLegacy } from '@notify/api';
import type { Config } from './config.js';
import { CliError, type CliIo } from './cli-error.js';
import { withMigratedDb } from './preflight.js';

/**
 * `notify webhook-secrets seal [--dry-run]`: every tenant's legacy plaintext signing secret
 * (`tenants.webhook_signing_secret`) becomes its current secret sealed under NOTIFY_SECRETS_KEY,
 * and the plaintext is cleared. The same secret keeps signing: receivers change nothing. Prints
 * each tenant it sealed (never a secret); a tenant it had to leave is named on stderr and makes
 * the exit code 1.
 */
export async function runWebhookSecretsSeal(
  config: Pick<Config, 'databaseUrl' | 'webhook'>,
  args: { readonly dryRun: boolean },
  deps: { readonly io: CliIo; readonly clock: Clock },
): Promise<void> {
  const key = config.webhook.secretsKey;
  if (!key) {
    throw new CliError(
      'webhook-secrets seal: set NOTIFY_SECRETS_KEY, the key the API and every dispatcher use (a dispatcher without it cannot open a sealed secret and retries its webhooks instead of signing them)',
      2,
    );
  }
  const result = await withMigratedDb(config.databaseUrl, 'notify-webhook-secrets', (db) =>
    db.transaction().execute((trx) =>
      webhookSecretSealLegacy(fromKysely(trx), {
        seal: (tenantId, plain) => sealSecret(key, plain, tenantId),
        now: deps.clock.now(),
        dryRun: args.dryRun,
      }),
    ),
  );
  const verb = args.dryRun ? 'would seal' : 'sealed';
  for (const tenant of result.sealed) deps.io.out(`${verb} ${tenant}`);
  for (const tenant of result.skipped) {
    deps.io.err(
      `left ${tenant}: it has a sealed current secret as well as the plaintext one; POST /v1/webhook-secret/rotate with that tenant's key clears the plaintext`,
    );
  }
  if (result.sealed.length === 0 && result.skipped.length === 0) deps.io.err('no tenant has a plaintext webhook secret');
  else deps.io.err(`${result.sealed.length} tenant(s) ${verb}${args.dryRun ? ' (dry run: nothing written)' : ''}`);
  if (result.skipped.length > 0) throw new CliError(`webhook-secrets seal: ${result.skipped.length} tenant(s) left as they were`, 1);
}
