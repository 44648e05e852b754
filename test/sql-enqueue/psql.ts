import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** What a psql run printed and how it ended. */
export interface PsqlResult {
  /** 0: success; 3: the script failed (ON_ERROR_STOP); 1 or 2: psql itself failed. */
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `script` through the real `psql` binary against `url`, the way an operator or another
 * language's service reaches PostgreSQL: no Node driver involved. `vars` become psql variables, so
 * a script can quote them with `:'name'` and no value needs escaping. Each value is read from a
 * file (`\set name \`cat file\``), not passed as `-v name=value`: a generated intent can be larger
 * than the kernel allows one command-line argument (128 KiB, `spawn E2BIG`).
 * Unaligned, tuples-only output; `ON_ERROR_STOP=1` unless the script sets it otherwise.
 */
export function psql(url: string, script: string, vars: Readonly<Record<string, string>> = {}): Promise<PsqlResult> {
  const args = [url, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1'];
  const dir = mkdtempSync(join(tmpdir(), 'notify-psql-'));
  const sets = Object.entries(vars).map(([name, value], i) => {
    if (!/^[a-z_][a-z0-9_]*$/i.test(name)) throw new Error(`psql variable name ${JSON.stringify(name)} is not a plain identifier`);
    const file = join(dir, `v${i}`);
    writeFileSync(file, `${value}\n`); // psql drops one trailing newline of a backquoted command's output
    return `\\set ${name} \`cat '${file}'\`\n`;
  });
  return new Promise<PsqlResult>((resolve, reject) => {
    const child = spawn('psql', args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PGAPPNAME: 'notify-sql-enqueue-test' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ exitCode: code ?? -1, stdout, stderr }));
    child.stdin.end(sets.join('') + script);
  }).finally(() => rmSync(dir, { recursive: true, force: true }));
}

/** A refusal as psql prints it with `\set VERBOSITY verbose`: the SQLSTATE, the message and the DETAIL JSON. */
export interface PsqlError {
  readonly sqlstate: string;
  readonly message: string;
  readonly detail:
    { readonly code: string; readonly errors: readonly { path: string; message: string }[]; readonly existing_id?: string } | undefined;
}

/** The first error in psql's stderr (`ERROR:  NT001: validation_failed: …` then `DETAIL:  {…}`), or undefined. */
export function psqlError(stderr: string): PsqlError | undefined {
  const error = /ERROR:\s+([0-9A-Z]{5}): (.*)/.exec(stderr);
  if (!error) return undefined;
  const detail = /DETAIL:\s+(\{.*\})/.exec(stderr);
  return { sqlstate: error[1]!, message: error[2]!, detail: detail ? JSON.parse(detail[1]!) : undefined };
}
