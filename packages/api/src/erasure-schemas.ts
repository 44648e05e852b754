import { z } from 'zod';

// The shapes of POST /v1/erasures: /openapi.json is generated from them and the tests parse responses with them.

/** Body of `POST /v1/erasures`. */
export const ErasureRequest = z
  .object({
    to: z
      .string()
      .trim()
      .min(1)
      .max(2048)
      .describe('The recipient as notifications name it (email address, phone number or webhook URL), matched case-insensitively'),
    delete_suppressions: z
      .boolean()
      .optional()
      .describe('Also delete its opt-outs (default false: an opt-out keeps the address from being messaged again)'),
  })
  .strict();
export type ErasureRequest = z.infer<typeof ErasureRequest>;

const count = z.int().min(0);

/** What an erasure did. */
export const ErasureView = z
  .object({
    id: z.string().describe('ers_…: the audit record (it keeps recipient_sha256, never the address)'),
    erased: count.describe('Notifications addressed to the recipient, all erased (ids, states and times kept)'),
    cancelled: count.describe('Of those, queued ones cancelled first, so nothing more is sent'),
    notifications: count,
    attempts: count.describe('Attempts whose error or provider answer was erased'),
    outbox_rows: count.describe('Outbox rows not yet purged that quoted the address'),
    refused_rows: count,
    callback_deliveries: count,
    bulk_retries: count.describe('Bulk retries whose filter named the address'),
    suppressions_deleted: count,
    suppressions_kept: count,
    recipient_sha256: z.string().describe('sha256 (hex) of the trimmed, lower-cased address'),
    created_at: z.iso.datetime({ offset: true }),
  })
  .strict();
export type ErasureView = z.infer<typeof ErasureView>;
