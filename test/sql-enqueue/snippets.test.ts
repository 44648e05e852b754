/**
 * The Java and Python snippets of docs/sql-enqueue.md run as printed, against a real database:
 * Java 17's single-file launch with the PostgreSQL JDBC driver (fetched once by Maven into
 * .cache/jdbc/), and python3 with psycopg 3 (Debian's python3-psycopg, which .ci/run installs when it is missing).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DOC = readFileSync(path.join(ROOT, 'docs/sql-enqueue.md'), 'utf8');
const JDBC_DRIVER = 'org.postgresql:postgresql:42.7.13';
const JDBC_JAR = path.join(ROOT, '.cache/jdbc/postgresql-42.7.13.jar');

/** The first fenced block of `language` after `heading` in the doc. */
function snippet(heading: string, language: string): string {
  const section = DOC.slice(DOC.indexOf(heading));
  const match = new RegExp('```' + language + '\\n([\\s\\S]*?)```').exec(section);
  if (!match) throw new Error(`no ${language} block under ${heading} in docs/sql-enqueue.md`);
  return match[1]!;
}

/** A python3 that has psycopg 3 (the one on PATH, or Debian's when a version manager shadows it), or undefined. */
async function pythonWithPsycopg(): Promise<string | undefined> {
  for (const python of ['python3', '/usr/bin/python3']) {
    const ok = await run(python, ['-c', 'import psycopg']).then(
      () => true,
      () => false,
    );
    if (ok) return python;
  }
  return undefined;
}
const python = await pythonWithPsycopg();

let t: TestDatabase;
let dir: string;
beforeAll(async () => {
  t = await createTestDatabase();
  dir = mkdtempSync(path.join(tmpdir(), 'notify-snippets-'));
});
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function notificationsWithKey(key: string) {
  const { rows } = await t.pool.query<{ id: string; body: string }>('SELECT id, body FROM notifications WHERE idempotency_key = $1', [key]);
  return rows;
}

describe('docs/sql-enqueue.md', () => {
  it('the JDBC snippet queues, reports the conflict and the refusal', { timeout: 180_000 }, async () => {
    if (!existsSync(JDBC_JAR)) {
      await run(
        'mvn',
        ['-B', '-q', '-Dstyle.color=never', 'dependency:copy', `-Dartifact=${JDBC_DRIVER}`, `-DoutputDirectory=${path.dirname(JDBC_JAR)}`],
        {
          cwd: ROOT,
        },
      );
    }
    const file = path.join(dir, 'Snippet.java');
    writeFileSync(file, snippet('## From Java (JDBC)', 'java'));
    const url = new URL(t.url);
    const jdbc = `jdbc:postgresql://${url.host}${url.pathname}?user=${encodeURIComponent(decodeURIComponent(url.username))}${url.password ? `&password=${encodeURIComponent(decodeURIComponent(url.password))}` : ''}`;
    const { stdout } = await run('java', ['-cp', JDBC_JAR, file, jdbc], { timeout: 120_000 });
    const lines = stdout.trim().split('\n');
    const [queued] = await notificationsWithKey('signup-42');
    expect(queued).toMatchObject({ body: 'Hello Ada' });
    expect(lines[0]).toBe(`queued ${queued!.id}`);
    expect(lines[1]).toBe(`conflict {"code": "idempotency_conflict", "errors": [], "existing_id": "${queued!.id}"}`);
    expect(lines[2]).toBe('refused NT001 {"code": "validation_failed", "errors": [{"path": "to", "message": "must be an email address"}]}');
  });

  it('the psycopg 3 snippet queues and reports the conflict', async () => {
    // Never skipped: .ci/run installs Debian's python3-psycopg when it is missing.
    if (!python) throw new Error('python3 with psycopg 3 is missing: apt-get install -y python3-psycopg (.ci/run does)');
    const file = path.join(dir, 'snippet.py');
    writeFileSync(file, snippet('## From Python (psycopg 3)', 'python'));
    const { stdout } = await run(python, [file, t.url], { timeout: 60_000 });
    const [queued] = await notificationsWithKey('signup-43');
    expect(stdout.trim().split('\n')).toEqual([`queued ${queued!.id}`, `conflict with ${queued!.id}`]);
  });
});
