/**
 * The metrics port of the HTTP layer: one observation per request, and the exposition text that
 * `GET /metrics` serves. The service's registry (`createMetrics` in @notify/cli) implements it;
 * `noMetrics` drops everything.
 */
export interface HttpMetrics {
  /** One finished request: its method, route pattern (never the raw path) and status. */
  observeHttp(labels: { readonly method: string; readonly route: string; readonly status: number }, seconds: number): void;
  /** A request shed with 503 `overloaded` before any work, by reason (`event_loop_delay`, `in_flight`). */
  observeShed(reason: string): void;
  /** One group of `POST /v1/notifications` requests written in one statement (group commit); `isolated`: its statement failed and its members were written one by one. */
  observeEnqueueGroup(size: number, isolated: boolean): void;
  /** The text exposition format, for GET /metrics. */
  render(): Promise<string>;
  /** The content type of `render()`'s output. */
  readonly contentType: string;
}

/** Metrics that record nothing and render an empty exposition. */
export const noMetrics: HttpMetrics = {
  observeHttp() {},
  observeShed() {},
  observeEnqueueGroup() {},
  render: async () => '',
  contentType: 'text/plain; version=0.0.4; charset=utf-8',
};
