import type { Admin } from 'kafkajs';
import { redactUrl } from '@notify/migrations';
import { fromKysely } from '@notify/outbox';
import { ConfigError, createDb, withTimeout } from '@notify/runtime';
import { type CliIo } from './cli-error.js';
import { type Config, type Env, loadConfig, unknownVariables } from './config.js';
import { createKafka } from './kafka-client.js';
import { REDACT_PATHS, createLogger } from './observability/logger.js';
import {
  autovacuumGaps,
  plaintextWebhookSecrets,
  checkDatabase,
  checkMigrations,
  connectKafkaAdmin,
  type TopicPlan,
  notifyTopics,
  planTopics,
  unknownMigrations,
} from './preflight.js';
import { type Role, needsKafka } from './roles.js';
import { notifySettingsRead } from './sql/notify-settings-read.js';
import {
  type StartWarning,
  autovacuumWarning,
  plaintextSecretsWarning,
  newerSchemaWarning,
  roleConfigWarnings,
  settingsChangeWarning,
  topicPlanWarnings,
  unknownVariablesWarning,
} from './start-warnings.js';
import { settingsChanges, storedSettingsOf } from './stored-settings.js';

/** How one check of `notify config-check` ended: `skipped` when an earlier one failed or the roles do not need it. */
type CheckStatus = 'ok' | 'failed' | 'skipped';

/** One check of `notify config-check`: what it checked and one line saying what it found. */
/** @internal Exported for its tests. */
export interface CheckResult {
  readonly name: 'postgresql' | 'schema' | 'notify_settings' | 'kafka' | 'topics';
  readonly status: CheckStatus;
  readonly detail: string;
}

/** A printable setting: secrets are `[redacted]` already. */
type SettingValue = string | number | boolean | null | readonly (string | number)[];

/** What `notify config-check` found, before it is printed (`renderConfigCheck`). */
/** @internal Exported for its tests. */
export interface ConfigCheckReport {
  readonly roles: readonly Role[];
  /** The resolved configuration, flattened to dotted paths, secrets redacted (`printableSettings`). */
  readonly settings: Readonly<Record<string, SettingValue>>;
  /** What `notify start` would warn about: at load time, then what the checks found. */
  readonly warnings: readonly StartWarning[];
  readonly checks: readonly CheckResult[];
}

/** Lines for stdout and stderr, and the exit code. */
interface Rendered {
  readonly out: readonly string[];
  readonly err: readonly string[];
  readonly exitCode: 0 | 1;
}

const REDACTED = '[redacted]';
// The field names the logger censors (REDACT_PATHS' last segments), plus the secrets key (a Buffer).
const SECRET_FIELDS: ReadonlySet<string> = new Set([...REDACT_PATHS.map((p) => p.split('.').at(-1)!), 'secretsKey']);

/**
 * The configuration as dotted paths (`retry.maxAttempts`) → value, for people and `--json`. A
 * field the logger would censor (`password`, `authToken`, `signingSecret`, `key`, …) and the
 * secrets key print as `[redacted]` when set; a URL prints without its password and its secret-named
 * query parameters (`redactUrl`), so DATABASE_URL and SMTP / SMS URLs with credentials are safe to paste.
 */
/** @internal Exported for its tests. */
export function printableSettings(config: Config): Record<string, SettingValue> {
  const out: Record<string, SettingValue> = {};
  const visit = (path: string, name: string, value: unknown) => {
    if (value === undefined || value === null) out[path] = null;
    else if (SECRET_FIELDS.has(name)) out[path] = REDACTED;
    else if (typeof value === 'string') out[path] = value.includes('://') ? redactUrl(value) : value;
    else if (typeof value === 'number' || typeof value === 'boolean') out[path] = value;
    else if (Array.isArray(value) && value.every((v) => typeof v === 'string' || typeof v === 'number')) out[path] = value;
    else if (Array.isArray(value)) value.forEach((v, i) => visit(`${path}.${i}`, String(i), v));
    else if (typeof value === 'object') for (const [k, v] of Object.entries(value)) visit(path ? `${path}.${k}` : k, k, v);
    else out[path] = REDACTED; // a kind of value a later field may bring: not shown rather than shown wrong
  };
  visit('', '', config);
  return out;
}

/**
 * The exit code of a report: 1 when a check failed, else 0. Warnings do not fail it: `notify start`
 * starts with them.
 */
/** @internal Exported for its tests. */
export function configCheckExitCode(report: ConfigCheckReport): 0 | 1 {
  return report.checks.some((c) => c.status === 'failed') ? 1 : 0;
}

/**
 * What `notify config-check` prints: the settings, the warnings and one line per check on stdout
 * (or one JSON object with `--json`), and on stderr one `notify: config-check: <check>: …` line per
 * failed check, whatever the format.
 */
/** @internal Exported for its tests. */
export function renderConfigCheck(report: ConfigCheckReport, { json }: { readonly json: boolean }): Rendered {
  const exitCode = configCheckExitCode(report);
  const failed = report.checks.filter((c) => c.status === 'failed');
  const err = failed.map((c) => `notify: config-check: ${c.name}: ${c.detail}`);
  if (json) {
    const doc = {
      ok: exitCode === 0,
      exitCode,
      roles: report.roles,
      settings: report.settings,
      warnings: report.warnings.map((w) => ({ message: w.message, ...w.fields })),
      checks: report.checks,
    };
    return { out: [JSON.stringify(doc)], err, exitCode };
  }
  const width = Math.max(...Object.keys(report.settings).map((k) => k.length));
  const out = [
    `notify config-check (roles: ${report.roles.join(', ')})`,
    'settings:',
    ...Object.entries(report.settings).map(([k, v]) => `  ${k.padEnd(width)}  ${Array.isArray(v) ? v.join(',') || '(none)' : String(v)}`),
    `warnings:${report.warnings.length === 0 ? ' none' : ''}`,
    ...report.warnings.map((w) => `  - ${w.message}`),
    'checks:',
    ...report.checks.map((c) => `  ${c.status.padEnd(7)}  ${c.name.padEnd(15)}  ${c.detail}`),
    exitCode === 0
      ? `notify config-check: ok${report.warnings.length > 0 ? ` (${report.warnings.length} warning${report.warnings.length === 1 ? '' : 's'})` : ''}`
      : `notify config-check: ${failed.length} check${failed.length === 1 ? '' : 's'} failed (${failed.map((c) => c.name).join(', ')})`,
  ];
  return { out, err, exitCode };
}

/** Options of `runConfigCheck`. */
export interface ConfigCheckOptions {
  readonly io: CliIo;
  readonly json: boolean;
  /** The bound on each check that reaches a server (default 5000): an unreachable host fails its check, it does not hang the command. */
  readonly timeoutMs?: number;
}

/**
 * `notify config-check`: loads the configuration as `notify start` does, prints it (secrets
 * redacted) with every warning `notify start` would log, and checks what `notify start` checks,
 * without changing anything: PostgreSQL answers, the schema has every migration of this build
 * (and none unknown to it: a warning, as at start), what a start would change in
 * `notify_settings` (a warning; nothing is written), and, with the relay or the dispatcher,
 * that Kafka answers and what `planTopics` finds about its topics (missing ones, and existing
 * ones with fewer replicas or another partition count: warnings, as at start). Resolves with the
 * exit code: 0 fine, 1 a check failed. An invalid configuration is thrown (a `ConfigError`, exit 2
 * as with every command), after the `--json` object that describes it.
 */
export async function runConfigCheck(env: Env, roles: readonly Role[], options: ConfigCheckOptions): Promise<number> {
  const { io, json } = options;
  let config: Config;
  try {
    config = loadConfig(env);
  } catch (err) {
    // runNotify prints the line every command prints for it and exits 2, as for any command.
    if (json && err instanceof ConfigError)
      io.out(JSON.stringify({ ok: false, exitCode: 2, configError: { variable: err.variable, message: err.message } }));
    throw err;
  }
  const warnings: StartWarning[] = [];
  const warn = (w: StartWarning | undefined) => void (w && warnings.push(w));
  warn(unknownVariablesWarning(unknownVariables(env)));
  for (const w of roleConfigWarnings(config, roles)) warn(w);
  const checks = [
    ...(await checkPostgres(config, options.timeoutMs ?? 5_000, warn)),
    ...(await checkKafka(config, roles, options.timeoutMs ?? 5_000, warn)),
  ];
  const rendered = renderConfigCheck({ roles, settings: printableSettings(config), warnings, checks }, { json });
  for (const line of rendered.out) io.out(line);
  for (const line of rendered.err) io.err(line);
  return rendered.exitCode;
}

/** The message of a failed check: the first line of the error, or that it did not answer in time. */
function reason(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!;
}

function bounded<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  return withTimeout(work, timeoutMs, () => new Error(`${what} did not answer within ${timeoutMs} ms`));
}

async function checkPostgres(config: Config, timeoutMs: number, warn: (w: StartWarning | undefined) => void): Promise<CheckResult[]> {
  const at = redactUrl(config.databaseUrl);
  try {
    await bounded(checkDatabase(config.databaseUrl, timeoutMs), timeoutMs, `PostgreSQL at ${at}`);
  } catch (err) {
    return [
      { name: 'postgresql', status: 'failed', detail: reason(err) },
      { name: 'schema', status: 'skipped', detail: 'PostgreSQL not reached' },
      { name: 'notify_settings', status: 'skipped', detail: 'PostgreSQL not reached' },
    ];
  }
  const results: CheckResult[] = [{ name: 'postgresql', status: 'ok', detail: `reachable at ${at}` }];
  const db = createDb({ connectionString: config.databaseUrl, max: 1, applicationName: 'notify-config-check' });
  try {
    try {
      const newer = await bounded(
        (async () => {
          await checkMigrations(db);
          warn(autovacuumWarning(await autovacuumGaps(db)));
          warn(plaintextSecretsWarning(await plaintextWebhookSecrets(db)));
          return unknownMigrations(db);
        })(),
        timeoutMs,
        `PostgreSQL at ${at}`,
      );
      warn(newerSchemaWarning(newer));
      results.push({
        name: 'schema',
        status: 'ok',
        detail: newer.length > 0 ? `newer than this build (see the warning)` : 'every migration of this build is applied',
      });
    } catch (err) {
      results.push({ name: 'schema', status: 'failed', detail: reason(err) });
      results.push({ name: 'notify_settings', status: 'skipped', detail: 'the schema is not up to date' });
      return results;
    }
    try {
      const stored = await bounded(notifySettingsRead(fromKysely(db)), timeoutMs, `PostgreSQL at ${at}`);
      const changes = settingsChanges(stored, storedSettingsOf(config));
      warn(settingsChangeWarning(changes, 'a notify start with this configuration would change'));
      results.push({
        name: 'notify_settings',
        status: 'ok',
        detail:
          stored === undefined
            ? 'not written yet: the first notify start writes it'
            : changes.length === 0
              ? 'the stored settings match this configuration'
              : `a start would change ${changes.join(', ')} (see the warning)`,
      });
    } catch (err) {
      results.push({ name: 'notify_settings', status: 'failed', detail: reason(err) });
    }
    return results;
  } finally {
    await db.destroy().catch(() => {});
  }
}

async function checkKafka(
  config: Config,
  roles: readonly Role[],
  timeoutMs: number,
  warn: (w: StartWarning | undefined) => void,
): Promise<CheckResult[]> {
  if (!needsKafka(roles)) {
    const why = `not needed by the roles ${roles.join(', ')}`;
    return [
      { name: 'kafka', status: 'skipped', detail: why },
      { name: 'topics', status: 'skipped', detail: why },
    ];
  }
  // As `notify start`'s preflight: few retries, so an unreachable broker fails in seconds. kafkajs's
  // own log lines would interleave with the report: they go nowhere (the check's line says why).
  const kafka = createKafka({
    brokers: config.kafkaBrokers,
    clientId: 'notify-config-check',
    logger: createLogger({ level: 'silent' }),
    retry: { retries: 2, initialRetryTime: 300, maxRetryTime: 1_000 },
    connectionTimeoutMs: Math.min(3_000, timeoutMs),
  });
  const brokers = config.kafkaBrokers.join(',');
  let admin: Admin;
  try {
    admin = await bounded(connectKafkaAdmin(kafka, config.kafkaBrokers), timeoutMs, `Kafka at ${brokers}`);
  } catch (err) {
    return [
      { name: 'kafka', status: 'failed', detail: reason(err) },
      { name: 'topics', status: 'skipped', detail: 'Kafka not reached' },
    ];
  }
  try {
    const total = notifyTopics(config).length;
    let plan: TopicPlan;
    try {
      plan = await bounded(planTopics(admin, config), timeoutMs, `Kafka at ${brokers}`);
    } catch (err) {
      return [
        { name: 'kafka', status: 'ok', detail: `reachable at ${brokers}` },
        { name: 'topics', status: 'failed', detail: reason(err) },
      ];
    }
    // The warnings notify start logs about existing topics (topicPlanWarnings), and one about the
    // topics it would create: none of them fails the check, as none stops a start.
    for (const w of topicPlanWarnings(plan)) warn(w);
    const { missing, otherPartitions } = plan;
    if (missing.length > 0) {
      warn({
        fields: { topics: missing.map((t) => t.topic) },
        message:
          `Kafka topics missing: ${missing.map((t) => t.topic).join(', ')}: notify start with the relay or the dispatcher creates them ` +
          `(${config.topicPartitions} partitions each, NOTIFY_TOPIC_PARTITIONS; delay topics ${config.retryTopicPartitions}, NOTIFY_RETRY_TOPIC_PARTITIONS)`,
      });
    }
    const notes = [
      ...(otherPartitions.length > 0 ? [`${otherPartitions.length} with another partition count`] : []),
      ...(missing.length > 0 ? [`${missing.length} missing`] : []),
    ];
    return [
      { name: 'kafka', status: 'ok', detail: `reachable at ${brokers} (${plan.brokers} broker${plan.brokers === 1 ? '' : 's'})` },
      {
        name: 'topics',
        status: 'ok',
        detail:
          notes.length === 0
            ? `${total} of ${total} present with the expected partitions`
            : `${total - missing.length} of ${total} present; ${notes.join(', ')} (see the warnings)`,
      },
    ];
  } finally {
    await bounded(admin.disconnect(), timeoutMs, 'Kafka').catch(() => {});
  }
}
