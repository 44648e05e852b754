import type { Channel, TransactionLike } from '@notify/outbox';
import { type Clock, ConfigError, type Logger } from '@notify/runtime';
import type { Provider } from './provider.js';
import { type RateLimit, type Timers, withRateLimit } from './rate-limit.js';
import { createSmsHttpProvider } from './sms/sms-http.js';
import { createSmtpProvider } from './smtp/smtp.js';
import { type Resolver, parseAllowCidrs } from './webhook/ssrf.js';
import { createTenantSecretSource } from './webhook/tenant-secrets.js';
import { createWebhookProvider } from './webhook/webhook.js';
import type { EndpointHealthConfig } from './endpoints/gate.js';
import { webhookSecretKey } from './webhook/signature.js';
import { type ProviderOrigins, urlOrigin } from './endpoints/endpoint.js';

/** The channel settings `createProviders` reads (the service's `Config` from `loadConfig` fits). */
export interface ProvidersConfig {
  readonly webhook: {
    /** CIDRs that webhook targets may resolve to even though they are private (NOTIFY_WEBHOOK_ALLOW_CIDRS). */
    readonly allowCidrs: readonly string[];
    /** Global Standard Webhooks signing secret (`whsec_…` or raw); per-tenant secrets override it. */
    readonly signingSecret: string | undefined;
    /** NOTIFY_SECRETS_KEY (32 bytes) that opens the tenants' sealed signing secrets; unset: tenants with sealed secrets fail transiently. */
    readonly secretsKey?: Buffer | undefined;
  };
  readonly smtp: {
    /** `smtp://user:pass@host:port` or `smtps://…`; unset disables the email channel. */
    readonly url: string | undefined;
    readonly from: string;
    /** Pooled SMTP connections at most (NOTIFY_SMTP_POOL_SIZE). */
    readonly poolSize: number;
    /** A second SMTP server (NOTIFY_SMTP_FALLBACK_URL), tried after the primary's transient failure or while its circuit is open. */
    readonly fallbackUrl?: string | undefined;
  };
  readonly sms: {
    /** Base URL of a Twilio-style gateway; unset disables the SMS channel. */
    readonly url: string | undefined;
    readonly accountId: string | undefined;
    readonly authToken: string | undefined;
    readonly from: string | undefined;
    /**
     * A second gateway (NOTIFY_SMS_FALLBACK_URL), used like the SMTP fallback. Credentials in
     * its URL (`https://account:token@host/…`) are its own; without them it uses the primary's.
     */
    readonly fallbackUrl?: string | undefined;
  };
  /** Receiver POSTs (webhook targets, SMS gateways): the undici pool of each HTTP adapter. */
  readonly http?: {
    /** Open connections per origin at most, per adapter (NOTIFY_HTTP_CONNECTIONS_PER_ORIGIN, default 64). */
    readonly connectionsPerOrigin: number;
  };
  /** Endpoint health: circuit breaker, auto-disable, shared rate limits (docs/endpoints.md). */
  readonly endpoints?: EndpointHealthConfig;
  /** Token-bucket limits per channel provider; undefined = unlimited. */
  readonly rateLimits: { readonly [C in Channel]: RateLimit | undefined };
}

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

/** The pool size of an HTTP adapter (webhook, SMS), when the configuration names one. */
function httpPoolOptions(config: ProvidersConfig): { connectionsPerOrigin?: number } {
  return config.http ? { connectionsPerOrigin: config.http.connectionsPerOrigin } : {};
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
export function createProviders(config: ProvidersConfig, deps: ProviderRegistryDeps): Partial<Record<Channel, Provider>> {
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
      tenantSecret: createTenantSecretSource({ db: deps.db, clock: deps.clock, secretsKey: config.webhook.secretsKey }),
      ...(deps.resolver ? { resolver: deps.resolver } : {}),
      ...httpPoolOptions(config),
    },
    { clock: deps.clock, logger: deps.logger },
  );
  if (config.smtp.url !== undefined) {
    providers.email = createSmtpProvider(
      { url: config.smtp.url, from: config.smtp.from, poolSize: config.smtp.poolSize },
      { logger: deps.logger },
    );
  }
  if (config.sms.url !== undefined) {
    providers.sms = createSmsHttpProvider(
      {
        baseUrl: config.sms.url,
        accountId: config.sms.accountId,
        authToken: config.sms.authToken,
        from: config.sms.from,
        ...httpPoolOptions(config),
      },
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

/**
 * Builds each channel's fallback provider (NOTIFY_SMTP_FALLBACK_URL, NOTIFY_SMS_FALLBACK_URL):
 * the same adapter and settings as the primary, another server. A channel without a primary or
 * without a fallback URL has none. The rate limit of the channel (NOTIFY_RATE_LIMIT_<CHANNEL>)
 * applies to each provider separately.
 */
export function createFallbackProviders(config: ProvidersConfig, deps: ProviderRegistryDeps): Partial<Record<Channel, Provider>> {
  const fallbacks: Partial<Record<Channel, Provider>> = {};
  if (config.smtp.url !== undefined && config.smtp.fallbackUrl !== undefined) {
    fallbacks.email = createSmtpProvider(
      { url: config.smtp.fallbackUrl, from: config.smtp.from, poolSize: config.smtp.poolSize },
      { logger: deps.logger },
    );
  }
  if (config.sms.url !== undefined && config.sms.fallbackUrl !== undefined) {
    const u = new URL(config.sms.fallbackUrl);
    const own = u.username !== '';
    const accountId = own ? decodeURIComponent(u.username) : config.sms.accountId;
    const authToken = own ? decodeURIComponent(u.password) : config.sms.authToken;
    u.username = '';
    u.password = '';
    fallbacks.sms = createSmsHttpProvider(
      {
        baseUrl: u.toString().replace(/\/$/, ''),
        accountId,
        authToken,
        from: config.sms.from,
        ...httpPoolOptions(config),
      },
      { clock: deps.clock, logger: deps.logger },
    );
  }
  for (const channel of Object.keys(fallbacks) as Channel[]) {
    const limit = config.rateLimits[channel];
    const provider = fallbacks[channel];
    if (limit && provider) {
      fallbacks[channel] = withRateLimit(limit, { clock: deps.clock, ...(deps.timers ? { timers: deps.timers } : {}) })(provider);
    }
  }
  return fallbacks;
}

/**
 * The endpoint origins of the email and SMS providers `createProviders` and
 * `createFallbackProviders` build from `config` (each the origin of its server's URL, without
 * credentials): a channel without a primary has none, and a fallback only beside a primary.
 */
export function providerOrigins(config: Pick<ProvidersConfig, 'smtp' | 'sms'>): ProviderOrigins {
  const origins: { -readonly [C in keyof ProviderOrigins]: ProviderOrigins[C] } = {};
  for (const [channel, urls] of [
    ['email', config.smtp],
    ['sms', config.sms],
  ] as const) {
    const primary = urls.url === undefined ? undefined : urlOrigin(urls.url);
    if (primary === undefined) continue;
    const fallback = urls.fallbackUrl === undefined ? undefined : urlOrigin(urls.fallbackUrl);
    origins[channel] = fallback === undefined ? { primary } : { primary, fallback };
  }
  return origins;
}
