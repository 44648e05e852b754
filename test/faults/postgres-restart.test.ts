/**
 * CI subset of the PostgreSQL-restart scenario: `notify start --roles api` on a PRIVATE server
 * (initdb + pg_ctl in a temp directory, its own port: the machine's cluster is never stopped).
 * While the server is down the API answers 503 `database_unreachable` problem+json with a
 * Retry-After, quickly (no hang); once it is back the same process answers again by itself. The
 * full scenario (relay and dispatcher too, under load, audited) is in test/chaos/faults.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { type PrivatePostgres, startPrivatePostgres } from '../support/chaos/private-postgres.js';
import { PROBE_KEY, probeApi } from '../support/chaos/scenarios.js';
import { ChildSet, chaosEnv } from '../support/chaos/stack.js';
import { waitFor } from '../support/wait.js';

describe('PostgreSQL stops and starts again under a running API', () => {
  let server: PrivatePostgres | undefined;
  const children = new ChildSet();
  beforeAll(async () => {
    server = await startPrivatePostgres();
  }, 120_000);
  afterAll(async () => {
    await children.stopAll().catch(() => {});
    await children.killAll();
    await server?.destroy();
  }, 60_000);

  it('answers 503 database_unreachable while it is down, and serves again once it is back', async () => {
    const env = chaosEnv({
      databaseUrl: server!.url,
      brokers: inject('kafkaBrokers').split(','),
      prefix: `${inject('runId')}.pgdown`,
      extra: { NOTIFY_API_KEYS: `chaos:${PROBE_KEY}` },
    });
    const api = await children.start('api', ['api'], env);
    expect((await probeApi(api.url)).status).toBe(404);

    await server!.stop();
    const probes = [];
    for (let i = 0; i < 5; i++) probes.push(await probeApi(api.url));
    for (const p of probes) {
      expect(p).toMatchObject({
        status: 503,
        code: 'database_unreachable',
        contentType: expect.stringContaining('application/problem+json') as unknown,
        retryAfter: expect.stringMatching(/^\d+$/) as unknown,
      });
    }
    // Not a hang on a connect timeout: a refused connection is answered at once (5 s is the probe's own limit).
    expect(Math.max(...probes.map((p) => p.ms))).toBeLessThan(5_000);

    await server!.start();
    await waitFor(async () => (await probeApi(api.url)).status === 404, {
      timeoutMs: 30_000,
      intervalMs: 200,
      message: 'the API answering again',
    });
    expect(api.exited).toBe(false);
  }, 120_000);
});
