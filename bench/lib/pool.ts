import pg from 'pg';

/**
 * A `pg` pool for the bench's own queries. It listens for errors: the bench drops its databases
 * WITH (FORCE), and `pool.end()` can resolve before an idle client's connection closed; the
 * termination then reaches that client and the pool re-emits it, which without a listener ends
 * the run (seen once after batch-enqueue). A query in progress still rejects.
 */
export function benchPool(url: string, max: number, applicationName?: string): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, ...(applicationName ? { application_name: applicationName } : {}) });
  pool.on('error', () => {});
  return pool;
}
