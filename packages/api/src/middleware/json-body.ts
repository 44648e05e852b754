import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../env.js';
import { ProblemError } from '../problem.js';

/** Largest request body the API reads: 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Largest body of `POST /v1/notifications/batch`: 4 MiB (1000 items of about 4 KiB). */
export const MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/**
 * Accepts only a JSON body of at most `maxBytes`: 415 for another content type, 413 when the
 * Content-Length says more or the streamed body grows past the limit (a chunked body is counted
 * while it is read, never buffered beyond the limit), 400 when the bytes are not JSON.
 * Sets `json` to the parsed value.
 */
export function jsonBody(maxBytes: number = MAX_BODY_BYTES): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ProblemError('payload_too_large', `the request body is larger than ${maxBytes} bytes`);
    },
  });
  return async (c, next) => {
    const type = c.req.header('content-type');
    if (!type || !JSON_TYPE.test(type)) {
      throw new ProblemError('unsupported_media_type', `send the body as application/json${type ? `, not ${type.split(';')[0]}` : ''}`, {
        headers: { 'accept-post': 'application/json' },
      });
    }
    return limit(c, async () => {
      const text = await c.req.text();
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch {
        // V8's message quotes the body; the caller has it already and logs must not carry it.
        throw new ProblemError('malformed_json', 'the request body is not valid JSON');
      }
      c.set('json', value);
      await next();
    });
  };
}
