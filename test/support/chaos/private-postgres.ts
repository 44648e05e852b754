import { execFile } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createDb } from '@notify/runtime';
import { ensureDatabase, migrateToLatest } from '@notify/migrations';

const run = promisify(execFile);
const BIN = '/usr/lib/postgresql/15/bin';

/**
 * A PostgreSQL server of the test's own (initdb in a temp directory, its own port), for the
 * scenarios that stop the server: the machine's shared cluster is never stopped or reconfigured.
 */
export interface PrivatePostgres {
  /** The migrated `notify` database on it. */
  readonly url: string;
  readonly port: number;
  /** `pg_ctl stop -m fast`: every connection is cut and new ones are refused until `start`. */
  stop(): Promise<void>;
  /** `pg_ctl start` on the kept data directory and port; resolves once it accepts connections. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  destroy(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL binary; as root (initdb refuses root) it runs as the `postgres` user. */
function pgTool(tool: string, args: readonly string[]) {
  const asRoot = process.getuid?.() === 0;
  const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', `${BIN}/${tool}`, ...args]] : [`${BIN}/${tool}`, [...args]];
  return run(cmd, argv, { timeout: 120_000 });
}

/** initdb + pg_ctl start on a free port (trust auth, 127.0.0.1 only), then creates and migrates `notify`. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'notify-pg-'));
  if (process.getuid?.() === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    chownSync(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const data = join(dir, 'data');
  const port = await freePort();
  await pgTool('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
  const start = async () => {
    await pgTool('pg_ctl', ['start', '-w', '-t', '60', '-D', data, '-l', join(dir, 'log'), '-o', options]);
  };
  const stop = async () => {
    await pgTool('pg_ctl', ['stop', '-w', '-t', '60', '-m', 'fast', '-D', data]);
  };
  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/notify`;
  try {
    await ensureDatabase(url);
    const db = createDb({ connectionString: url, max: 1 });
    try {
      await migrateToLatest(db);
    } finally {
      await db.destroy();
    }
  } catch (err) {
    await stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    url,
    port,
    stop,
    start,
    async destroy() {
      await stop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
