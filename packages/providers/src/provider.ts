import type { Channel } from '@notify/outbox';

/**
 * What a provider is asked to deliver: the notification with its content already rendered
 * (templates are rendered by the dispatcher before the call).
 */
export interface Delivery {
  /** The notification id: stable across attempts, so receivers can dedupe (webhook-id, Message-ID). */
  readonly id: string;
  readonly tenantId: string;
  readonly channel: Channel;
  /** Email address, E.164 number or webhook URL. */
  readonly to: string;
  readonly subject: string | null;
  /** Plain-text body (for email: the text/plain part). */
  readonly body: string;
  /**
   * Email only, optional: the text/html alternative (a template's `html_body`, rendered with
   * HTML escaping). Absent or null: the email is text only. Other channels ignore it.
   */
  readonly html?: string | null;
  /** The template variables / webhook data, as given at enqueue. */
  readonly data: Record<string, unknown> | null;
  readonly metadata: Record<string, string>;
  /** 1 for the first attempt. */
  readonly attempt: number;
  readonly createdAt: Date;
}

/**
 * The outcome of one attempt, as data. Providers classify: only they know whether an answer
 * is permanent. Unknown errors are transient.
 */
export type SendResult =
  | { readonly kind: 'sent'; readonly providerStatus?: string }
  | { readonly kind: 'permanent'; readonly error: string; readonly providerStatus?: string }
  | {
      readonly kind: 'transient';
      readonly error: string;
      readonly providerStatus?: string;
      /** Not before this instant (Retry-After); raises the backoff delay, capped by the max delay. */
      readonly notBefore?: Date;
    };

/**
 * One port per outside effect: delivers a notification over one channel.
 *
 * - `send` never throws for a provider's answer: it returns a `SendResult`. A throw is treated
 *   by the dispatcher as a transient failure with the error's message.
 * - `send` must stop and return (transient, "timeout") when `signal` aborts: the dispatcher
 *   aborts at the per-attempt timeout (NOTIFY_SEND_TIMEOUT_MS).
 * - `send` may be called concurrently, up to the dispatcher's in-flight limit.
 * - Implementations never log bodies or secrets; ids and provider response codes only.
 */
export interface Provider {
  readonly channel: Channel;
  /**
   * The endpoint a provider with one fixed server sends to (SMTP, SMS gateway): its
   * `scheme://host:port`, without credentials. Absent for webhook, whose endpoint is the origin
   * of each delivery's URL (`endpointTargetOf`).
   */
  readonly origin?: string;
  send(delivery: Delivery, signal: AbortSignal): Promise<SendResult>;
  /**
   * Optional, for rate-limited providers (`withRateLimit`): waits until this delivery may be
   * sent and reserves that capacity for the next `send` of the same `delivery` object.
   * Call it BEFORE starting the per-attempt timeout, with a signal that aborts only on shutdown,
   * so that waiting for the rate limit does not eat the attempt's time. Resolves false when
   * `signal` aborted first (nothing reserved). Without a prior `admit`, `send` waits itself,
   * inside the attempt's signal.
   */
  admit?(delivery: Delivery, signal: AbortSignal): Promise<boolean>;
  /** Releases pooled connections. */
  close?(): Promise<void>;
}
