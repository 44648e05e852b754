import { type Channel, type Clock, type Config, ConfigError, type Logger, type TransactionLike } from '@notify/outbox';
import type { Provider } from './provider.js';
import { type Timers, withRateLimit } from './rate-limit.js';
import { createSmsHttpProvider } from './sms-http.js';
import { createSmtpProvider } from './smtp.js';
import { type Resolver, parseAllowCidrs } from './ssrf.js';
import { createTenantSecretSource } from './tenant-secrets.js';
import { createWebhookProvider } from './webhook.js';
import { webhookSecretKey } from './webhook-signature.js';

/** Dependencies of `createProviders`. */
export interface ProviderRegistryDeps {
  /** Reads per-tenant webhook signing secrets. */
  readonly db: TransactionLike;
  readonly clock: Clock;
  readonly logger: Logger;
  /** How rate limits wait; Node's timers by default. */
  readonly timers?: Timers;
  /** Webhook target name resolution; `dns.lookup` by default. */
  readonly resolver?: Resolver;
}

/**
 * Builds the provider of every enabled channel from the configuration:
 * - webhook: always (NOTIFY_WEBHOOK_ALLOW_CIDRS, NOTIFY_WEBHOOK_SECRET, per-tenant secrets);
 * - email: when NOTIFY_SMTP_URL is set;
 * - sms: when NOTIFY_SMS_URL is set;
 * each wrapped in its token bucket when NOTIFY_RATE_LIMIT_<CHANNEL> is set. A channel without
 * a provider is absent from the result (the dispatcher fails such notifications permanently).
 * Throws `ConfigError` for settings that only make sense here (a malformed CIDR or secret).
 */
export function createProviders(config: Config, deps: ProviderRegistryDeps): Partial<Record<Channel, Provider>> {
  try {
    parseAllowCidrs(config.webhook.allowCidrs);
  } catch (err) {
    throw new ConfigError('NOTIFY_WEBHOOK_ALLOW_CIDRS', (err as Error).message);
  }
  if (config.webhook.signingSecret !== undefined) {
    try {
      webhookSecretKey(config.webhook.signingSecret);
    } catch (err) {
      throw new ConfigError('NOTIFY_WEBHOOK_SECRET', (err as Error).message);
    }
  }
  const providers: Partial<Record<Channel, Provider>> = {};
  providers.webhook = createWebhookProvider(
    {
      allowCidrs: config.webhook.allowCidrs,
      signingSecret: config.webhook.signingSecret,
      tenantSecret: createTenantSecretSource({ db: deps.db, clock: deps.clock }),
      ...(deps.resolver ? { resolver: deps.resolver } : {}),
    },
    { clock: deps.clock, logger: deps.logger },
  );
  if (config.smtp.url !== undefined) {
    providers.email = createSmtpProvider({ url: config.smtp.url, from: config.smtp.from, poolSize: config.smtp.poolSize }, { logger: deps.logger });
  }
  if (config.sms.url !== undefined) {
    providers.sms = createSmsHttpProvider(
      { baseUrl: config.sms.url, accountId: config.sms.accountId, authToken: config.sms.authToken, from: config.sms.from },
      { clock: deps.clock, logger: deps.logger },
    );
  }
  for (const channel of Object.keys(providers) as Channel[]) {
    const limit = config.rateLimits[channel];
    const provider = providers[channel];
    if (limit && provider) {
      providers[channel] = withRateLimit(limit, { clock: deps.clock, ...(deps.timers ? { timers: deps.timers } : {}) })(provider);
    }
  }
  return providers;
}
