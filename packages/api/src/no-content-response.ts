import { type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** Statuses whose answer never has a body (RFC 9110 §15.3.5 and §15.4.5), so nothing for a Content-Type to describe. */
const WITHOUT_BODY: ReadonlySet<number> = new Set([204, 304]);

/**
 * The Node response to serve the API through (`serve({ …, serverOptions: { ServerResponse:
 * NoContentServerResponse } })`): a 204 or 304 is written without `Content-Type`. @hono/node-server
 * gives every response that has none `text/plain; charset=UTF-8` when it writes the head
 * (`buildOutgoingHttpHeaders`), `c.body(null, 204)` included, so the app cannot leave it out: the
 * DELETE routes and OPTIONS answered 204 with a content type and no content. It is dropped here,
 * where the head is written; every other response is written as it was.
 */
export class NoContentServerResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    if (WITHOUT_BODY.has(statusCode)) {
      // Set with setHeader (end() without writeHead writes the head from these).
      this.removeHeader('content-type');
      if (typeof reasonOrHeaders === 'string') return super.writeHead(statusCode, reasonOrHeaders, withoutContentType(headers));
      return super.writeHead(statusCode, withoutContentType(reasonOrHeaders));
    }
    return typeof reasonOrHeaders === 'string'
      ? super.writeHead(statusCode, reasonOrHeaders, headers)
      : super.writeHead(statusCode, reasonOrHeaders);
  }
}

/** `headers` (an object, or Node's flat [name, value, name, value…] list) without Content-Type. */
function withoutContentType(
  headers: OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined,
): OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined {
  if (headers === undefined) return undefined;
  if (Array.isArray(headers)) {
    const kept: OutgoingHttpHeader[] = [];
    for (let i = 0; i < headers.length; i += 2) {
      if (String(headers[i]).toLowerCase() !== 'content-type') kept.push(headers[i]!, headers[i + 1]!);
    }
    return kept;
  }
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-type'));
}
