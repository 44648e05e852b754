import { describe, expect, it } from 'vitest';
import { type ProcessHooks, runNotify } from './main.js';

/** Runs `notify <argv>` in this process and collects what it writes. */
async function run(argv: readonly string[], env: Record<string, string>) {
  const out: string[] = [];
  const err: string[] = [];
  const proc: ProcessHooks = {
    onSignal: () => {},
    exit: (code) => {
      throw new Error(`exit(${code}) called`);
    },
  };
  const code = await runNotify(argv, env, { out: (l) => out.push(l), err: (l) => err.push(l) }, proc);
  return { code, out, err };
}

describe('runNotify exit codes', () => {
  // Every command that reads the configuration refuses a bad variable before it reaches a server
  // (DATABASE_URL points nowhere: reaching it would be exit 1).
  it.each([
    [['migrate']],
    [['start']],
    [['start', '--roles', 'api']],
    [['config-check']],
    [['api-keys', 'list']],
    [['dlq', 'redrive', '--topic-offset-range', '0:1-2', '--dry-run']],
  ])('%j with an invalid variable: exit 2, one line naming it', async (argv) => {
    const res = await run(argv, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere', NOTIFY_MAX_ATTEMPTS: '0' });
    expect(res).toEqual({
      code: 2,
      out: [],
      err: ['notify: invalid configuration: NOTIFY_MAX_ATTEMPTS: expected a number from 1 to 100, got 0'],
    });
  });

  it.each([[['migrate']], [['api-keys', 'list']], [['dlq', 'redrive', '--topic-offset-range', '0:1-2', '--dry-run']]])(
    '%j names a NOTIFY_* variable notify does not read (a typo) on stderr, then goes on',
    async (argv) => {
      const res = await run(argv, {
        DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere',
        KAFKA_BROKERS: '127.0.0.1:1',
        NOTIFY_MIGRATE_LOCK_ATEMPTS: '3',
      });
      expect(res.err[0]).toBe(
        'notify: warning: notify does not read NOTIFY_MIGRATE_LOCK_ATEMPTS (did you mean NOTIFY_MIGRATE_LOCK_ATTEMPTS?): it has no effect (docs/configuration.md lists every variable)',
      );
      expect(res.code).toBe(1); // then it went on, to a server that does not answer
    },
  );

  it.each([
    [['api-keys', 'list', '--json'], 'api-keys list: it takes no option --json'],
    [['api-keys', 'revoke', 'key_1', '--tenant', 'acme'], 'api-keys revoke: it takes no option --tenant'],
    [['api-keys', 'list', '--name', 'x'], 'api-keys list: it takes no option --name'],
  ])('%j: an option the subcommand does not take is a usage error (exit 2), not ignored', async (argv, message) => {
    const res = await run(argv, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' });
    expect(res.code).toBe(2);
    expect(res.err[0]!.split('\n')[0]).toBe(`notify: ${message}`);
  });

  it('config-check --json with a usage error prints one object on stdout too', async () => {
    for (const argv of [
      ['config-check', '--json', '--roles', 'foo'],
      ['config-check', '--json', 'extra'],
    ]) {
      const res = await run(argv, {});
      expect(res.code).toBe(2);
      expect(res.out.map((l) => JSON.parse(l) as unknown)).toEqual([
        { ok: false, exitCode: 2, usageError: expect.stringMatching(/^(--roles|config-check): /) },
      ]);
    }
  });

  it('usage: asked for (help) on stdout with 0; without a command on stderr with 2', async () => {
    const asked = await run(['help'], {});
    expect({ code: asked.code, err: asked.err }).toEqual({ code: 0, err: [] });
    expect(asked.out[0]).toMatch(/^Usage: notify <command>/);
    const none = await run([], {});
    expect({ code: none.code, out: none.out }).toEqual({ code: 2, out: [] });
    expect(none.err[0]).toMatch(/^Usage: notify <command>/);
  });

  it('start: a signal before start-up begins (while its modules load) ends it with 0, nothing started', async () => {
    // The signal arrives as soon as a handler is in; DATABASE_URL points nowhere, so starting would be exit 1.
    const handlers: string[] = [];
    const proc: ProcessHooks = {
      onSignal: (signal, handler) => {
        handlers.push(signal);
        if (signal === 'SIGTERM') handler();
      },
      exit: (code) => {
        throw new Error(`exit(${code}) called`);
      },
    };
    const err: string[] = [];
    const code = await runNotify(
      ['start', '--roles', 'api'],
      { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere', LOG_LEVEL: 'silent' },
      { out: () => {}, err: (l) => err.push(l) },
      proc,
    );
    expect({ code, err, handlers }).toEqual({ code: 0, err: [], handlers: ['SIGTERM', 'SIGINT'] });
  });

  it('config-check --json also prints the error as JSON on stdout', async () => {
    const res = await run(['config-check', '--json'], { NOTIFY_MIGRATE_LOCK_ATTEMPTS: 'x' });
    expect(res.code).toBe(2);
    expect(res.out.map((l) => JSON.parse(l) as unknown)).toEqual([
      {
        ok: false,
        exitCode: 2,
        configError: {
          variable: 'NOTIFY_MIGRATE_LOCK_ATTEMPTS',
          message: 'NOTIFY_MIGRATE_LOCK_ATTEMPTS: expected a whole number, got "x"',
        },
      },
    ]);
    expect(res.err).toEqual(['notify: invalid configuration: NOTIFY_MIGRATE_LOCK_ATTEMPTS: expected a whole number, got "x"']);
  });
});
