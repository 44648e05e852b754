import { z } from 'zod';
import { STATUS_EVENT_TYPES } from '@notify/contract';

// The shapes of /v1/callbacks: /openapi.json is generated from them and the tests parse responses with them.

const instant = z.iso.datetime({ offset: true });

/** Body of `PUT /v1/callbacks`: the tenant's one callback URL and the status event types it receives. */
export const CallbackRequest = z
  .object({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2048)
      .describe('http(s) URL, checked by the SSRF policy now and at every send (no private, loopback or link-local addresses)'),
    events: z
      .array(z.enum(STATUS_EVENT_TYPES))
      .min(1)
      .max(STATUS_EVENT_TYPES.length)
      .refine((events) => new Set(events).size === events.length, 'no type twice')
      .describe('The StatusEventV1 types to receive'),
  })
  .strict();
export type CallbackRequest = z.infer<typeof CallbackRequest>;

/** The tenant's callback registration and its delivery backlog. */
export const CallbackView = z
  .object({
    url: z.string(),
    events: z.array(z.enum(STATUS_EVENT_TYPES)),
    created_at: instant,
    updated_at: instant,
    pending: z.int().min(0).describe('Events waiting to be delivered (at most 10,000; beyond, events are dropped)'),
    failed: z.int().min(0).describe('Events that failed for good (max attempts, or a permanent answer), kept until retention'),
    dropped: z.int().min(0).describe('Events not queued because the backlog was full'),
    last_dropped_at: instant.nullable(),
  })
  .strict();
export type CallbackView = z.infer<typeof CallbackView>;
