import type { Config, UnknownVariable } from './config.js';
import { dispatcherShutdownShareMs } from './role-configs.js';
import type { Role } from './roles.js';

/**
 * A warning `notify start` logs (and `notify config-check` prints): the fields of the log line and
 * its message. One builder per warning, so the two commands cannot word them differently.
 */
export interface StartWarning {
  readonly fields: Readonly<Record<string, unknown>>;
  readonly message: string;
}

/** NOTIFY_* variables notify does not read (`unknownVariables`), as one warning; undefined when there are none. */
export function unknownVariablesWarning(unknown: readonly UnknownVariable[]): StartWarning | undefined {
  if (unknown.length === 0) return undefined;
  const named = unknown.map((u) => (u.closest ? `${u.name} (did you mean ${u.closest}?)` : u.name));
  return {
    fields: { variables: unknown.map((u) => u.name) },
    message: `notify does not read ${named.join(', ')}: ${unknown.length === 1 ? 'it has' : 'they have'} no effect (docs/configuration.md lists every variable)`,
  };
}

/** The warnings about the configuration of `roles` themselves, before anything is reached (empty when there are none). */
export function roleConfigWarnings(config: Config, roles: readonly Role[]): StartWarning[] {
  const warnings: StartWarning[] = [];
  if (roles.includes('dispatcher') && config.dispatcher.sendTimeoutMs > dispatcherShutdownShareMs(config)) {
    const share = dispatcherShutdownShareMs(config);
    warnings.push({
      fields: { sendTimeoutMs: config.dispatcher.sendTimeoutMs, dispatcherShutdownMs: share },
      message:
        `NOTIFY_SEND_TIMEOUT_MS (${config.dispatcher.sendTimeoutMs}) is more than the dispatcher's share of NOTIFY_SHUTDOWN_TIMEOUT_MS ` +
        `(half: ${share}): at a graceful shutdown, deliveries that run longer are abandoned and sent again ` +
        'after the restart (a duplicate for the recipient when the first one went through); raise NOTIFY_SHUTDOWN_TIMEOUT_MS to at least twice NOTIFY_SEND_TIMEOUT_MS',
    });
  }
  return warnings;
}

/** Applied migrations this build does not know (`unknownMigrations`); undefined when there are none. */
export function newerSchemaWarning(newer: readonly string[]): StartWarning | undefined {
  if (newer.length === 0) return undefined;
  return {
    fields: { migrations: newer },
    message:
      `the database schema is newer than this build of notify (applied, unknown here: ${newer.join(', ')}): ` +
      'fine while a rolling deploy replaces this version; otherwise run the version that has these migrations',
  };
}

/** Why autovacuum leaves the churning tables alone (`autovacuumGaps`); undefined when it looks after them. */
export function autovacuumWarning(gaps: readonly string[]): StartWarning | undefined {
  if (gaps.length === 0) return undefined;
  return {
    fields: { autovacuum: gaps },
    message:
      'autovacuum does not look after the outbox and notifications: run VACUUM ANALYZE on them yourself (docs/operations.md, "Vacuum and statistics")',
  };
}

/** What a start would change in `notify_settings` (`settingsChanges`); undefined when it changes nothing. */
export function settingsChangeWarning(changes: readonly string[], verb = 'this start changes'): StartWarning | undefined {
  if (changes.length === 0) return undefined;
  return {
    fields: { changes },
    message:
      `${verb} notify_settings (${changes.join(', ')}): every enqueuer of this database (the API of every process, ` +
      'enqueue(), notify_enqueue) follows them from now on; give every notify process the same NOTIFY_MAX_ATTEMPTS, ' +
      'NOTIFY_DEFAULT_TTL_MS and NOTIFY_EVENTS (docs/configuration.md)',
  };
}

/** Existing topics with fewer replicas than a start would give new ones (`planTopicReplication`); undefined when there are none. */
export function lowReplicationWarning(
  lowerExisting: readonly { readonly topic: string; readonly replicationFactor: number }[],
  replicationFactor: number,
): StartWarning | undefined {
  if (lowerExisting.length === 0) return undefined;
  return {
    fields: { topics: lowerExisting.map((t) => `${t.topic} (RF ${t.replicationFactor})`), replication: replicationFactor },
    message:
      `existing Kafka topics have fewer replicas than ${replicationFactor}: notify start never changes an existing topic; ` +
      'raise their replication with kafka-reassign-partitions, or they lose messages with their broker',
  };
}
