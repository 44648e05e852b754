import http, { type IncomingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';

/**
 * A signal that aborts when `parent` does or after `ms`, whichever comes first; `clear()` stops
 * the timer and lets go of `parent` once the request is over. Not
 * `AbortSignal.any([parent, AbortSignal.timeout(ms)])`: on Node 20 the timeout signal inside a
 * composite can be garbage-collected before it fires (nodejs/node#57736), and a hung request
 * then never times out (seen in CI: a 200 ms timeout that had not fired after 60 s).
 */
export function attemptSignal(parent: AbortSignal, ms: number): { readonly signal: AbortSignal; clear(): void } {
  const controller = new AbortController();
  const onAbort = () => controller.abort(parent.reason);
  const timer = setTimeout(() => controller.abort(new DOMException('the attempt timed out', 'TimeoutError')), ms);
  if (parent.aborted) onAbort();
  else parent.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    clear() {
      clearTimeout(timer);
      parent.removeEventListener('abort', onAbort);
    },
  };
}

/** One POST, as the webhook and SMS adapters send it. */
export interface HttpPostRequest {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Aborts the request (connect, send or read). */
  readonly signal: AbortSignal;
  /** Replaces name resolution for the connection (the SSRF guard's checked lookup). */
  readonly lookup?: LookupFunction;
  /** Keep-alive agents to reuse connections; one per protocol. */
  readonly agents?: { readonly http: http.Agent; readonly https: https.Agent };
  /** At most this many bytes of the response body are kept; the rest is not read. */
  readonly maxResponseBytes: number;
}

/** The answer. `body` holds at most `maxResponseBytes`; `truncated` says whether more was sent. */
export interface HttpPostResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer;
  readonly truncated: boolean;
}

/**
 * POSTs with node:http(s). Redirects are never followed (node:http does not follow them; the
 * caller classifies 3xx). Rejects with the socket's error (its `code` is the errno) or an
 * `AbortError` when `signal` aborts. Reads at most `maxResponseBytes` of the answer and then
 * destroys the socket, so a hostile receiver cannot make us buffer without limit.
 */
export function httpPost(request: HttpPostRequest): Promise<HttpPostResponse> {
  return new Promise((resolve, reject) => {
    const { url } = request;
    const isHttps = url.protocol === 'https:';
    const options: https.RequestOptions = {
      method: 'POST',
      headers: { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
      signal: request.signal,
    };
    if (request.lookup) options.lookup = request.lookup;
    if (request.agents) options.agent = isHttps ? request.agents.https : request.agents.http;
    const req = (isHttps ? https : http).request(url, options, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const finish = (truncated: boolean) => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated });
      };
      res.on('data', (chunk: Buffer) => {
        if (settled) return;
        const room = request.maxResponseBytes - size;
        if (chunk.length > room) {
          if (room > 0) chunks.push(chunk.subarray(0, room));
          size = request.maxResponseBytes;
          finish(true);
          // Stop reading: the socket is not reused, the rest is never buffered.
          res.destroy();
          return;
        }
        chunks.push(chunk);
        size += chunk.length;
      });
      res.on('end', () => finish(false));
      const fail = (err: Error) => {
        if (!settled) {
          settled = true;
          reject(err);
        }
      };
      res.on('error', fail);
      res.on('close', () => {
        if (request.signal.aborted) fail(Object.assign(new Error('the request was aborted'), { name: 'AbortError', code: 'ABORT_ERR' }));
        else fail(Object.assign(new Error('the connection closed before the response ended'), { code: 'ECONNRESET' }));
      });
    });
    req.on('error', reject);
    req.end(request.body);
  });
}
