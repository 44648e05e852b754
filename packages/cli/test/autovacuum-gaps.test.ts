/**
 * `autovacuumGaps`, which `notify start` logs as a warning: what keeps autovacuum from notify's
 * churning tables, read from the server and the tables' own settings.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/support/db.js';
import { autovacuumGaps } from '../src/preflight.js';

let tdb: TestDatabase;
beforeAll(async () => {
  tdb = await createTestDatabase();
});
afterAll(async () => {
  await tdb?.close();
});

/** What the server says, whatever machine runs the test (CI's PostgreSQL may run with autovacuum off). */
async function serverGaps(): Promise<string[]> {
  const { rows } = await tdb.pool.query<{ autovacuum: string; track_counts: string }>(
    `SELECT current_setting('autovacuum') AS autovacuum, current_setting('track_counts') AS track_counts`,
  );
  return [
    ...(rows[0]!.autovacuum === 'on' ? [] : ['autovacuum is off on the server']),
    ...(rows[0]!.track_counts === 'on' ? [] : ['track_counts is off on the server']),
  ];
}

describe('autovacuumGaps', () => {
  it("names the server's setting and each churning table that turned autovacuum off", async () => {
    const server = await serverGaps();
    expect(await autovacuumGaps(tdb.db)).toEqual(server);

    await tdb.pool.query('ALTER TABLE outbox SET (autovacuum_enabled = off)');
    await tdb.pool.query('ALTER TABLE notifications SET (autovacuum_enabled = false)');
    // A table notify does not churn is not its concern.
    await tdb.pool.query('ALTER TABLE api_keys SET (autovacuum_enabled = false)');
    expect(await autovacuumGaps(tdb.db)).toEqual([
      ...server,
      'autovacuum_enabled is off for notifications',
      'autovacuum_enabled is off for outbox',
    ]);

    await tdb.pool.query('ALTER TABLE outbox SET (autovacuum_enabled = on)');
    await tdb.pool.query('ALTER TABLE notifications RESET (autovacuum_enabled)');
    expect(await autovacuumGaps(tdb.db)).toEqual(server);
  });
});
