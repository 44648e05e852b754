import { parseArgs } from 'node:util';
import { ConfigError, systemClock } from '@notify/runtime';
import { type Env, loadConfig, unknownVariables } from './config.js';
import { DatabaseUnreachableError } from '@notify/migrations';
import { CliError, type CliIo } from './cli-error.js';
import type { Role } from './roles.js';

// Commands are imported when they run: `migrate` and `api-keys` need neither Kafka, the relay,
// the dispatcher nor the HTTP stack, and a short command should start fast.

/** The help text of `notify`. */
export const USAGE = `Usage: notify <command> [options]

Commands:
  migrate                               create the database if needed and apply pending migrations
  start [--roles api,relay,dispatcher]  run the given roles in this process (default: all three)
  config-check [--roles …] [--json]     before a deploy: print the settings and the warnings start
                                        would, and check PostgreSQL, notify_settings and (relay,
                                        dispatcher) Kafka; exit 0 ok, 1 a check failed
  api-keys create --tenant T [--name N] [--json]
                                        issue an API key; it is printed once, only its hash is stored
  api-keys revoke <key-id>              revoke a key (refused within NOTIFY_API_KEY_CACHE_MS)
  api-keys list [--tenant T]            list keys (ids and states, never the keys)
  webhook-secrets seal [--dry-run]      seal every tenant's legacy plaintext webhook signing secret
                                        under NOTIFY_SECRETS_KEY (the same secret keeps signing)
  dlq redrive --topic-offset-range P:FROM-TO [--topic-offset-range …] [--reason TEXT]
              [--source-topic T] [--dry-run] [--force]
                                        re-publish dead letters of <prefix>.dlq to the topic
                                        they came from (docs/operations.md); --dry-run lists them
  help                                  this text

Configuration comes from the environment; see docs/configuration.md. Every command exits 2 on a
usage error or an invalid configuration, 1 on a failure at run time.`;

/** Process-level hooks `start` uses; the real process by default, replaceable in tests. */
export interface ProcessHooks {
  onSignal(signal: NodeJS.Signals, handler: () => void): void;
  exit(code: number): never;
}

const realProcess: ProcessHooks = {
  onSignal: (signal, handler) => void process.on(signal, handler),
  exit: (code) => process.exit(code),
};

/**
 * Runs one `notify` command and resolves with the exit code. Failures a person can fix print
 * one line on stderr (`notify: …`); `exitCodeOf` decides the code. `start` resolves only after a
 * graceful shutdown on SIGTERM or SIGINT.
 */
export async function runNotify(argv: readonly string[], env: Env, io: CliIo, proc: ProcessHooks = realProcess): Promise<number> {
  try {
    return await dispatch(argv, env, io, proc);
  } catch (err) {
    io.err(`notify: ${describe(err)}`);
    if (env.LOG_LEVEL === 'debug' || env.LOG_LEVEL === 'trace') io.err(String((err as Error)?.stack ?? err));
    return exitCodeOf(err);
  }
}

/**
 * The exit code of a failed command, the same for every subcommand: 2 when it was given something
 * wrong (a usage error, or an invalid or missing environment variable, a `ConfigError`): fix the
 * command line or the environment, a restart will not help. 1 for a failure at run time (a server
 * that does not answer, a port in use, a crash). Supervisors and deploy scripts tell them apart by it.
 */
function exitCodeOf(err: unknown): number {
  if (err instanceof ConfigError) return 2;
  return err instanceof CliError ? err.exitCode : 1;
}

function describe(err: unknown): string {
  if (err instanceof ConfigError) return `invalid configuration: ${err.message}`;
  if (err instanceof CliError || err instanceof DatabaseUnreachableError) return err.message;
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n')[0] ?? 'failed';
}

async function dispatch(argv: readonly string[], env: Env, io: CliIo, proc: ProcessHooks): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    // Asked for, it is the answer (stdout, 0); without a command, a usage error (stderr, 2).
    if (command === undefined) {
      io.err(USAGE);
      return 2;
    }
    io.out(USAGE);
    return 0;
  }
  const usageError = (message: string) => new CliError(`${message}\n\n${USAGE}`, 2);
  const parse = <O extends Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>>(options: O) => {
    try {
      return parseArgs({ args: [...rest], options, allowPositionals: true, strict: true });
    } catch (err) {
      throw usageError(`${command}: ${(err as Error).message}`);
    }
  };
  /** Refuses arguments beyond the `max` positionals `what` takes (a stray word is a mistake, not something to ignore). */
  const noStray = (what: string, positionals: readonly string[], max: number) => {
    if (positionals.length > max)
      throw usageError(
        `${what}: unexpected argument ${positionals
          .slice(max)
          .map((p) => `"${p}"`)
          .join(' ')}`,
      );
  };

  /** The configuration of a command other than `start` (which logs it): an unknown NOTIFY_* variable (a typo) is named on stderr. */
  const loadConfigNamingTypos = async () => {
    const config = loadConfig(env);
    const { unknownVariablesWarning } = await import('./start-warnings.js');
    const unknown = unknownVariablesWarning(unknownVariables(env));
    if (unknown) io.err(`notify: warning: ${unknown.message}`);
    return config;
  };

  switch (command) {
    case 'migrate': {
      noStray('migrate', parse({}).positionals, 0);
      const { runMigrate } = await import('./migrate.js');
      await runMigrate(await loadConfigNamingTypos(), io);
      return 0;
    }
    case 'start': {
      const { values, positionals } = parse({ roles: { type: 'string' } });
      noStray('start', positionals, 0);
      // Handlers go in first: loading the roles' modules (below) and start-up take seconds, and a
      // signal meanwhile must not kill the process (exit 143): one before start-up begins ends it
      // with 0 and nothing started, one during start-up stops the service once it is up.
      let early: NodeJS.Signals | undefined;
      let onSignal = (signal: NodeJS.Signals) => {
        early ??= signal;
      };
      proc.onSignal('SIGTERM', () => onSignal('SIGTERM'));
      proc.onSignal('SIGINT', () => onSignal('SIGINT'));
      const { parseRoles } = await import('./roles.js');
      const { startNotify } = await import('./start.js');
      const { unknownVariablesWarning } = await import('./start-warnings.js');
      const { createLogger } = await import('./observability/logger.js');
      const roles = parseRoles(values.roles);
      const config = loadConfig(env);
      const logger = createLogger({ level: config.logLevel, base: { pid: process.pid } });
      const unknown = unknownVariablesWarning(unknownVariables(env));
      if (unknown) logger.warn(unknown.fields, unknown.message);
      // No AsyncLocalStorage context manager (installTraceContext) by default: on Node 20 one turns
      // on promise hooks for every promise in the process, and nothing here needs the active
      // context without an SDK (the dispatcher's log lines take traceId from the message's
      // traceparent header; docs/observability.md, "Tracing").
      if (early) {
        logger.info({ signal: early }, 'signal before start-up: nothing started');
        return 0;
      }
      const running = await startNotify(config, roles, { logger, clock: systemClock });
      // Tests and scripts read the URLs from this line: "listening on <url>" is the API's (the
      // admin one without the api role), "/metrics on <url>" always the admin port's.
      const roleList = roles.join(', ');
      io.out(
        running.url !== undefined
          ? `notify: API listening on ${running.url} (roles: ${roleList}); /healthz /readyz /metrics on ${running.adminUrl}`
          : `notify: /healthz /readyz /metrics listening on ${running.adminUrl} (roles: ${roleList})`,
      );
      return new Promise<number>((resolve) => {
        let signalled = false;
        onSignal = (signal: NodeJS.Signals) => {
          // A repeated signal is ignored, not a "force quit": under `pnpm notify` (pnpm → tsx → node)
          // one Ctrl-C reaches this process more than once. The deadline below bounds the wait.
          if (signalled) return;
          signalled = true;
          logger.info({ signal, deadlineMs: config.shutdownTimeoutMs }, 'shutting down');
          const deadline = setTimeout(() => {
            logger.error({ deadlineMs: config.shutdownTimeoutMs }, 'shutdown deadline passed: exiting');
            proc.exit(1);
          }, config.shutdownTimeoutMs);
          running.stop().then(
            () => {
              clearTimeout(deadline);
              logger.info({}, 'stopped');
              resolve(0);
            },
            (err: unknown) => {
              clearTimeout(deadline);
              logger.error({ err: (err as Error).message }, 'shutdown failed');
              resolve(1);
            },
          );
        };
        if (early) onSignal(early);
      });
    }
    case 'config-check': {
      const { parseRoles } = await import('./roles.js');
      let args: { roles: readonly Role[]; json: boolean };
      try {
        const { values, positionals } = parse({ roles: { type: 'string' }, json: { type: 'boolean' } });
        noStray('config-check', positionals, 0);
        args = { roles: parseRoles(values.roles), json: values.json ?? false };
      } catch (err) {
        // With --json a script reads stdout: a usage error is one object there too (and its line on stderr).
        if (rest.includes('--json') && err instanceof CliError) {
          io.out(JSON.stringify({ ok: false, exitCode: err.exitCode, usageError: err.message.split('\n')[0] }));
        }
        throw err;
      }
      const { runConfigCheck } = await import('./config-check.js');
      return runConfigCheck(env, args.roles, { io, json: args.json });
    }
    case 'api-keys': {
      const { values, positionals } = parse({ tenant: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } });
      const [sub, ...args] = positionals;
      if (sub === 'create' || sub === 'list') noStray(`api-keys ${sub}`, positionals, 1);
      if (sub === 'revoke') noStray('api-keys revoke', positionals, 2);
      // Each subcommand takes its own options: one it does not take is a mistake, not something to ignore.
      const takes: Record<string, readonly string[]> = { create: ['tenant', 'name', 'json'], revoke: [], list: ['tenant'] };
      const foreign = Object.keys(values).filter((o) => sub !== undefined && takes[sub] !== undefined && !takes[sub].includes(o));
      if (foreign.length > 0) throw usageError(`api-keys ${sub}: it takes no option --${foreign[0]}`);
      const { runApiKeysCreate, runApiKeysList, runApiKeysRevoke } = await import('./api-keys.js');
      const config = await loadConfigNamingTypos();
      if (sub === 'create') {
        await runApiKeysCreate(
          config,
          { tenant: values.tenant, name: values.name, json: values.json ?? false },
          { io, clock: systemClock },
        );
        return 0;
      }
      if (sub === 'revoke') {
        await runApiKeysRevoke(config, args[0], { io, clock: systemClock });
        return 0;
      }
      if (sub === 'list') {
        await runApiKeysList(config, values.tenant, io);
        return 0;
      }
      throw new CliError(`api-keys: expected create, revoke or list${sub ? `, got "${sub}"` : ''}`, 2);
    }
    case 'webhook-secrets': {
      const { values, positionals } = parse({ 'dry-run': { type: 'boolean' } });
      const [sub] = positionals;
      if (sub !== 'seal') throw new CliError(`webhook-secrets: expected seal${sub ? `, got "${sub}"` : ''}`, 2);
      noStray('webhook-secrets seal', positionals, 1);
      const { runWebhookSecretsSeal } = await import('./webhook-secrets.js');
      await runWebhookSecretsSeal(await loadConfigNamingTypos(), { dryRun: values['dry-run'] ?? false }, { io, clock: systemClock });
      return 0;
    }
    case 'dlq': {
      const { values, positionals } = parse({
        'topic-offset-range': { type: 'string', multiple: true },
        reason: { type: 'string' },
        'source-topic': { type: 'string' },
        'dry-run': { type: 'boolean' },
        force: { type: 'boolean' },
      });
      const [sub, ...extra] = positionals;
      if (sub !== 'redrive' || extra.length > 0)
        throw new CliError(`dlq: expected redrive${sub ? `, got "${[sub, ...extra].join(' ')}"` : ''}`, 2);
      const { parseOffsetRanges } = await import('./dlq/offset-range.js');
      const { runDlqRedrive } = await import('./dlq/redrive.js');
      const ranges = parseOffsetRanges(values['topic-offset-range']);
      await runDlqRedrive(
        await loadConfigNamingTypos(),
        {
          ranges,
          reason: values.reason,
          sourceTopic: values['source-topic'],
          dryRun: values['dry-run'] ?? false,
          force: values.force ?? false,
        },
        { io, clock: systemClock },
      );
      return 0;
    }
    default:
      throw new CliError(`unknown command "${command}"; expected migrate, start, config-check, api-keys, webhook-secrets, dlq or help`, 2);
  }
}
