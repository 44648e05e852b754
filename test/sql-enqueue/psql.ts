import { spawn } from 'node:child_process';

/** What a psql run printed and how it ended. */
export interface PsqlResult {
  /** 0: success; 3: the script failed (ON_ERROR_STOP); 1 or 2: psql itself failed. */
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `script` through the real `psql` binary against `url`, the way an operator or another
 * language's service reaches PostgreSQL: no Node driver involved. `vars` become psql variables
 * (`-v name=value`), so a script can quote them with `:'name'` and no value needs escaping.
 * Unaligned, tuples-only output; `ON_ERROR_STOP=1` unless the script sets it otherwise.
 */
export function psql(url: string, script: string, vars: Readonly<Record<string, string>> = {}): Promise<PsqlResult> {
  const args = [url, '-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', ...Object.entries(vars).flatMap(([k, v]) => ['-v', `${k}=${v}`])];
  return new Promise((resolve, reject) => {
    const child = spawn('psql', args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, PGAPPNAME: 'notify-sql-enqueue-test' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ exitCode: code ?? -1, stdout, stderr }));
    child.stdin.end(script);
  });
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
