import pg from 'pg';
import { waitFor } from './wait.js';

/**
 * Locks api_keys of the database at `url` (every API-key lookup blocks) until `release`, so that
 * requests stay in progress for as long as a test needs; `waiters(n)` waits for n blocked lookups.
 */
export async function lockApiKeys(url: string) {
  const locker = new pg.Client({ connectionString: url });
  await locker.connect();
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
  return {
    waiters: (n: number, message: string) =>
      waitFor(
        async () => {
          const { rows } = await locker.query<{ n: number }>(
            "SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'api_keys'::regclass AND NOT granted",
          );
          return rows[0]!.n >= n;
        },
        { message },
      ),
    release: () => locker.query('COMMIT'),
    end: () => locker.end(),
  };
}
