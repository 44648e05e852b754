import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type TestDatabase, createTestDatabase } from '../../../test/support/db.js';
import { waitFor } from '../../../test/support/wait.js';
import { enqueue, enqueueMany, type NotificationIntent } from '@notify/outbox';
import { insertMessages, testMessage } from './support.js';

// The outbox trigger rings (pg_notify) only while a relay sleeps, so busy relays do not make every
// enqueue commit take PostgreSQL's global notify lock. Checked without timing: a marker NOTIFY sent
// after the insert commits arrives after any notification of that insert (delivery follows commit order).

let tdb: TestDatabase;
let listener: pg.Client;
const heard: string[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  listener = new pg.Client({ connectionString: tdb.url });
  await listener.connect();
  listener.on('notification', (n) => heard.push(n.channel));
  await listener.query('LISTEN notify_outbox');
  await listener.query('LISTEN test_marker');
});

afterAll(async () => {
  await listener?.end();
  await tdb?.close();
});

async function insertThenMark(write: () => Promise<unknown> = () => insertMessages(tdb.pool, [testMessage('k', 0)])): Promise<string[]> {
  heard.length = 0;
  await write();
  await tdb.pool.query(`SELECT pg_notify('test_marker', '')`);
  await waitFor(() => heard.includes('test_marker'), { message: 'the marker notification' });
  return heard.slice(0, heard.indexOf('test_marker'));
}

describe('outbox doorbell', () => {
  it('does not notify while no relay sleeps', async () => {
    await tdb.pool.query(
      `INSERT INTO relay_instances (instance_id, started_at, expires_at, sleeping) VALUES ('busy', now(), now() + interval '1 hour', false)`,
    );
    expect(await insertThenMark()).toEqual([]);
  });

  it('notifies while a relay sleeps, and stops when it is busy again', async () => {
    await tdb.pool.query(`UPDATE relay_instances SET sleeping = true WHERE instance_id = 'busy'`);
    expect(await insertThenMark()).toEqual(['notify_outbox']);
    await tdb.pool.query(`UPDATE relay_instances SET sleeping = false WHERE instance_id = 'busy'`);
    expect(await insertThenMark()).toEqual([]);
  });

  // Every way enqueue() writes goes through the same trigger: its plain path, enqueueMany's plain
  // batch (the API's group commit) and the function's path.
  const plain: NotificationIntent = { tenant_id: 'acme', channel: 'email', to: 'ada@example.com', body: 'Hi' };
  const writers: Record<string, () => Promise<unknown>> = {
    'enqueue(), plain path': () => enqueue(tdb.pool, plain),
    'enqueueMany(), plain batch': () => enqueueMany(tdb.pool, [plain, { ...plain, to: 'bob@example.com' }]),
    "enqueue(), the function's path (data)": () => enqueue(tdb.pool, { ...plain, data: { order: 1 } }),
  };
  for (const [name, write] of Object.entries(writers)) {
    it(`${name}: rings while a relay sleeps, not while it is busy`, async () => {
      await tdb.pool.query(`UPDATE relay_instances SET sleeping = true WHERE instance_id = 'busy'`);
      expect(await insertThenMark(write)).toEqual(['notify_outbox']);
      await tdb.pool.query(`UPDATE relay_instances SET sleeping = false WHERE instance_id = 'busy'`);
      expect(await insertThenMark(write)).toEqual([]);
    });
  }
});
