import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { DEFAULT_DATABASE_URL } from '@notify/cli';
import { createDb } from '@notify/runtime';
import { ensureDatabase, migrateToLatest, withDatabase } from '@notify/migrations';
import { ensureKafka } from '../../scripts/kafka.mjs';

/**
 * Once per `vitest run` of the integration project: an up-to-date build, a migrated template database (each test
 * file copies it, so files never see each other's rows) and a Kafka broker (started here
 * unless one runs or KAFKA_BROKERS names one). The databases made here are dropped at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // Tests import the packages' TypeScript sources, but the processes they start run the compiled
  // command (`node packages/cli/dist/bin/notify.js`), as users do: bring dist/ up to date first.
  // Incremental: about a second when nothing changed.
  const root = fileURLToPath(new URL('../../', import.meta.url));
  execFileSync(process.execPath, [`${root}node_modules/typescript/bin/tsc`, '-b', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  const serverUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL;
  const runId = `nt${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  const template = `${runId}_tpl`;
  const templateUrl = withDatabase(serverUrl, template);
  await ensureDatabase(templateUrl);
  const db = createDb({ connectionString: templateUrl, max: 1 });
  try {
    await migrateToLatest(db);
  } finally {
    await db.destroy();
  }
  const kafka = await ensureKafka({ log: (line) => process.stderr.write(`[kafka] ${line}\n`) });
  project.provide('databaseUrl', serverUrl);
  project.provide('databaseTemplate', template);
  project.provide('kafkaBrokers', kafka.brokers);
  project.provide('runId', runId);

  // The broker is left running on purpose: the next run reuses it warm (a cold start costs
  // seconds), and several runs may share it. `.ci/run` and `pnpm kafka stop` stop it.
  return async () => {
    const admin = new pg.Client({ connectionString: withDatabase(serverUrl, 'postgres') });
    await admin.connect();
    try {
      const { rows } = await admin.query<{ datname: string }>('SELECT datname FROM pg_database WHERE datname LIKE $1', [`${runId}%`]);
      for (const { datname } of rows) {
        await admin.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
      }
    } finally {
      await admin.end();
    }
  };
}
