import { z } from 'zod';
import { CHANNELS } from '@notify/outbox';
import { ENDPOINT_STATES, parseRateLimit } from '@notify/providers';
import { PageSize } from './schemas.js';

// The shapes of /v1/endpoints (docs/endpoints.md): /openapi.json is generated from them and the
// tests parse responses with them.

const instant = z.iso.datetime({ offset: true });

/** An endpoint id as the API hands it out: `ep_` + 24 hex digits. */
export const ENDPOINT_ID = /^ep_[0-9a-f]{24}$/;

/** A rate limit in force: its rate, burst and where it comes from. */
const EffectiveRateLimit = z
  .object({
    per_second: z.number().positive(),
    burst: z.int().min(1),
    source: z.enum(['endpoint', 'default']).describe('`endpoint`: its own rate_limit; `default`: NOTIFY_ENDPOINT_RATE_LIMIT'),
  })
  .strict();

/** One endpoint: a webhook origin or a channel's SMTP / SMS provider, with its health. */
export const EndpointView = z
  .object({
    id: z.string().describe('ep_ + 24 hex digits of sha256(tenant, channel, origin)'),
    channel: z.enum(CHANNELS),
    origin: z.string().describe('scheme://host:port (webhook target, SMTP server, `sms:` + gateway); never credentials or a path'),
    provider: z.enum(['primary', 'fallback']).describe("Which of the channel's providers it is (webhooks: primary)"),
    state: z
      .enum(ENDPOINT_STATES)
      .describe('`ok` delivering; `open` circuit open, deliveries put off until a probe succeeds; `disabled` deliveries end dead'),
    consecutive_failures: z.int().min(0).describe('Transient failures since the last success'),
    failing_since: instant.nullable().describe('First failure of the current streak; auto-disable counts from it'),
    last_error_code: z.string().nullable().describe('Provider status of the last failure ("503", "ECONNREFUSED")'),
    last_failure_at: instant.nullable(),
    last_success_at: instant.nullable(),
    opened_at: instant.nullable().describe('When the circuit opened (state open)'),
    probe_at: instant.nullable().describe('State open: the next probe may go from then on'),
    disabled_at: instant.nullable(),
    disabled_by: z.enum(['auto', 'operator']).nullable().describe('`auto`: failing for NOTIFY_ENDPOINT_DISABLE_AFTER; `operator`: disable'),
    rate_limit: z.string().nullable().describe("The endpoint's own rate limit (PATCH); null: the default applies"),
    effective_rate_limit: EffectiveRateLimit.nullable().describe('The limit in force; null: none'),
    created_at: instant,
    updated_at: instant,
  })
  .strict();
export type EndpointView = z.infer<typeof EndpointView>;

/** A page of endpoints. */
export const EndpointList = z
  .object({
    data: z.array(EndpointView),
    next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last'),
  })
  .strict();

/** Query of `GET /v1/endpoints`. Unknown parameters are rejected. */
export const EndpointListQuery = z
  .object({
    state: z.enum(ENDPOINT_STATES).optional().describe('Only endpoints in this state'),
    channel: z.enum(CHANNELS).optional().describe('Only endpoints of this channel'),
    limit: PageSize,
    cursor: z.string().min(1).max(200).optional().describe('`next_cursor` of the previous page'),
  })
  .strict();

/** Body of `PATCH /v1/endpoints/{id}`. */
export const EndpointPatch = z
  .object({
    rate_limit: z
      .string()
      .max(100)
      .nullable()
      .superRefine((raw, ctx) => {
        if (raw === null) return;
        try {
          parseRateLimit(raw);
        } catch (err) {
          ctx.addIssue({ code: 'custom', message: (err as Error).message });
        }
      })
      .describe(
        '`<count>/<s|m|h>[,burst=<n>]`, e.g. `50/s,burst=100`, shared by every dispatcher; null: back to NOTIFY_ENDPOINT_RATE_LIMIT',
      ),
  })
  .strict();

/** One operator action on an endpoint. */
const EndpointActionView = z
  .object({
    action: z.enum(['enable', 'disable', 'set_rate_limit']),
    from_state: z.enum(ENDPOINT_STATES),
    to_state: z.enum(ENDPOINT_STATES),
    rate_limit: z.string().nullable().describe('set_rate_limit: the new override (null: cleared)'),
    api_key_id: z.string().nullable().describe('The API key that asked (its id, never the key)'),
    occurred_at: instant,
  })
  .strict();

/** `GET /v1/endpoints/{id}/actions`: oldest first. */
export const EndpointActionList = z.object({ data: z.array(EndpointActionView) }).strict();
