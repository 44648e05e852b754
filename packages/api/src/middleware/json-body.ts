import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import type { MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppEnv } from '../env.js';
import { ProblemError } from '../problem.js';

/** Largest request body the API reads: 64 KiB. */
export const MAX_BODY_BYTES = 64 * 1024;
/** Largest body of `POST /v1/notifications/batch`: 4 MiB (1000 items of about 4 KiB). */
export const MAX_BATCH_BODY_BYTES = 4 * 1024 * 1024;

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** An HTTP/1.1 request without a body: no Content-Length (or 0) and no Transfer-Encoding (RFC 9112 §6.3). */
function announcesNoBody(contentLength: string | undefined, transferEncoding: string | undefined): boolean {
  return transferEncoding === undefined && (contentLength === undefined || contentLength.trim() === '0');
}

/**
 * Accepts only a JSON body of at most `maxBytes`: 415 for another content type, 413 when the
 * Content-Length says more or the streamed body grows past the limit (a chunked body is counted
 * while it is read, never buffered beyond the limit), 400 when the bytes are not JSON.
 * Sets `json` to the parsed value. With `optional`, a request without a body (whatever its
 * Content-Type says) passes with `json` unset.
 *
 * On @hono/node-server (`c.env.incoming`, the Node request) the bytes are read from the Node
 * stream itself: `c.req.text()` there first builds a WHATWG Request (an AbortController, a web
 * stream over the socket, undici's body extraction), 5–6 % of the API process's busy time under
 * POST /v1/notifications load (BENCHMARKS.md, session 8 profile).
 */
export function jsonBody(maxBytes: number = MAX_BODY_BYTES, options: { readonly optional?: boolean } = {}): MiddlewareHandler<AppEnv> {
  const limit = bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw tooLarge(maxBytes);
    },
  });
  return async (c, next) => {
    const type = c.req.header('content-type');
    const incoming = (c.env as { incoming?: unknown } | undefined)?.incoming;
    if (
      options.optional &&
      (isReadable(incoming) ? announcesNoBody(c.req.header('content-length'), c.req.header('transfer-encoding')) : c.req.raw.body === null)
    ) {
      // No body at all (a POST whose options all have defaults): `json` stays unset.
      return next();
    }
    if (!type || !JSON_TYPE.test(type)) {
      throw new ProblemError('unsupported_media_type', `send the body as application/json${type ? `, not ${type.split(';')[0]}` : ''}`, {
        headers: { 'accept-post': 'application/json' },
      });
    }
    const parse = (text: string) => {
      try {
        c.set('json', JSON.parse(text) as unknown);
      } catch {
        // V8's message quotes the body; the caller has it already and logs must not carry it.
        throw new ProblemError('malformed_json', 'the request body is not valid JSON');
      }
    };
    if (isReadable(incoming)) {
      const length = Number(c.req.header('content-length'));
      if (length > maxBytes) throw tooLarge(maxBytes);
      // The whole body has usually arrived with the headers (`complete`). When the client is still
      // sending it, the wait costs the server nothing: the in-flight slot is given back meanwhile,
      // so slow (or deliberately stalled) senders cannot hold every slot and shed everyone else.
      const slot = incoming.complete ? undefined : c.get('inFlightSlot');
      if (slot === undefined) {
        parse(await readText(incoming, maxBytes));
        return next();
      }
      slot.release();
      let text: string;
      try {
        text = await readText(incoming, maxBytes);
      } finally {
        slot.retake();
      }
      parse(text);
      return next();
    }
    return limit(c, async () => {
      parse(await c.req.text());
      await next();
    });
  };
}

/** Stateless between calls (no `stream` option), so one serves every request. */
const UTF8 = new TextDecoder();

function tooLarge(maxBytes: number): ProblemError {
  return new ProblemError('payload_too_large', `the request body is larger than ${maxBytes} bytes`);
}

function isReadable(value: unknown): value is IncomingMessage {
  // Read already (by anything): left to c.req.text(), which reports it.
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Readable).on === 'function' &&
    (value as Readable).readableEnded === false
  );
}

/** The body as UTF-8 text (a BOM dropped, as `Request.text()` does); a 413 once more than `maxBytes` arrived, the rest then discarded. */
function readText(incoming: Readable, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    if (incoming.destroyed) {
      reject(new Error('the request was closed before its body ended'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      incoming.off('data', onData);
      incoming.off('end', onEnd);
      incoming.off('error', onError);
      incoming.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        incoming.resume(); // the rest is read and dropped, never buffered
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      done();
      resolve(UTF8.decode(Buffer.concat(chunks, size)));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const onClose = () => {
      done();
      reject(new Error('the request was closed before its body ended'));
    };
    incoming.on('data', onData);
    incoming.on('end', onEnd);
    incoming.on('error', onError);
    incoming.on('close', onClose);
  });
}
