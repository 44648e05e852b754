import { createHash } from 'node:crypto';
import type { Channel } from '@notify/outbox';
import { memoizeByString } from '../memo.js';
import type { Delivery, Provider } from '../provider.js';

/** Which of a channel's providers an endpoint is: the configured one, or its fallback (NOTIFY_SMTP_FALLBACK_URL, NOTIFY_SMS_FALLBACK_URL). */
export type ProviderRole = 'primary' | 'fallback';

/** The states of an endpoint: delivering (`ok`), paused by its circuit breaker (`open`), or `disabled`. */
export const ENDPOINT_STATES = ['ok', 'open', 'disabled'] as const;
/** One of `ENDPOINT_STATES`. */
export type EndpointState = (typeof ENDPOINT_STATES)[number];

/**
 * What one tenant's deliveries go to: a webhook origin, or a channel's SMTP / SMS provider. The
 * circuit breaker, auto-disable and the endpoint's rate limit are kept per endpoint.
 */
export interface EndpointTarget {
  readonly tenantId: string;
  readonly channel: Channel;
  /** `scheme://host:port`, never credentials or a path. */
  readonly origin: string;
  readonly provider: ProviderRole;
}

/**
 * The origin of a URL as an endpoint names it: `scheme://host:port`, with the default port
 * written out (so `https://a.example` and `https://a.example:443` are one endpoint), no
 * credentials, path or query. `prefix` tells providers of different channels apart (`sms:`).
 * Returns undefined for a string that is not a URL.
 */
export function urlOrigin(url: string, prefix = ''): string | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const port = u.port || DEFAULT_PORTS[u.protocol] || '';
  return `${prefix}${u.protocol}//${u.hostname}${port ? `:${port}` : ''}`;
}

const DEFAULT_PORTS: Readonly<Record<string, string>> = { 'http:': '80', 'https:': '443', 'smtp:': '25', 'smtps:': '465' };

/** Ids already derived, by hash input: every delivery asks twice (admit, observe), mostly for the same few endpoints. */
const derivedEndpointId = memoizeByString((input) => `ep_${createHash('sha256').update(input).digest('hex').slice(0, 24)}`);

/** The endpoint's id: `ep_` + 24 hex digits of sha256(tenant, channel, origin), so any process derives it without a lookup. */
export function endpointId(target: Pick<EndpointTarget, 'tenantId' | 'channel' | 'origin'>): string {
  return derivedEndpointId(`${target.tenantId}\0${target.channel}\0${target.origin}`);
}

/** `{ origin }` of a provider's fixed server URL, to spread into the provider object; `{}` for a string that is not a URL. */
export function originOf(url: string): { readonly origin?: string } {
  const origin = urlOrigin(url);
  return origin === undefined ? {} : { origin };
}

/** `urlOrigin(url)` (`null`: not a URL), parsed once per distinct URL: every webhook delivery asks, mostly for the same few URLs. */
const webhookOrigin = memoizeByString((url) => urlOrigin(url) ?? null);

/**
 * The endpoint a delivery through `provider` goes to: the provider's own `origin` (SMTP, SMS),
 * else the origin of the delivery's URL (webhook). Undefined when there is none (a malformed
 * webhook URL: the provider refuses it permanently anyway).
 */
export function endpointTargetOf(
  provider: Pick<Provider, 'channel' | 'origin'>,
  delivery: Pick<Delivery, 'tenantId' | 'to'>,
  role: ProviderRole,
): EndpointTarget | undefined {
  const origin = provider.origin ?? (provider.channel === 'webhook' ? (webhookOrigin(delivery.to) ?? undefined) : undefined);
  return origin === undefined ? undefined : { tenantId: delivery.tenantId, channel: provider.channel, origin, provider: role };
}

/**
 * The fixed origins of the email and SMS providers (and their fallbacks) a configuration builds:
 * what `providerOrigins` reads from it, for a process that shows endpoints without building
 * providers (the console). Webhook has none: its endpoint is each delivery's URL.
 */
export type ProviderOrigins = Partial<Record<Exclude<Channel, 'webhook'>, { readonly primary: string; readonly fallback?: string }>>;

/**
 * The endpoints a notification's delivery is tried at, in the dispatcher's order
 * (packages/dispatcher/src/handler.ts): a webhook's URL origin; a channel's provider, then its
 * fallback. Each is `endpointTargetOf`'s answer for that provider, so the ids are the ones the
 * dispatcher's gate keeps. Empty when there is none (a malformed or erased webhook URL, a channel
 * whose provider `origins` does not name).
 */
export function notificationEndpointTargets(
  notification: { readonly tenantId: string; readonly channel: Channel; readonly recipient: string },
  origins: ProviderOrigins,
): EndpointTarget[] {
  const delivery = { tenantId: notification.tenantId, to: notification.recipient };
  const { channel } = notification;
  const candidates: [Pick<Provider, 'channel' | 'origin'>, ProviderRole][] =
    channel === 'webhook'
      ? [[{ channel }, 'primary']]
      : (['primary', 'fallback'] as const).flatMap((role) => {
          const origin = origins[channel]?.[role];
          return origin === undefined ? [] : [[{ channel, origin }, role]];
        });
  return candidates.flatMap(([provider, role]) => endpointTargetOf(provider, delivery, role) ?? []);
}
