import type { Config, UnknownVariable } from './config.js';
import type { TopicPlan } from './preflight.js';
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

/** Tenants whose webhook signing secret is still stored in plaintext (`plaintextWebhookSecrets`); undefined when none is. */
export function plaintextSecretsWarning(tenants: number): StartWarning | undefined {
  if (tenants === 0) return undefined;
  return {
    fields: { tenants },
    message:
      `${tenants} tenant${tenants === 1 ? ' keeps its' : 's keep their'} webhook signing secret in plaintext (tenants.webhook_signing_secret): ` +
      'seal them with `notify webhook-secrets seal`, the same secret keeps signing (docs/operations.md, "Sealing legacy webhook secrets")',
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

/**
 * What `planTopics` found about the existing topics, as warnings: `notify start` logs them at
 * `warn` and starts, `notify config-check` lists them and does not fail on them. Empty when there
 * is nothing to say. Missing topics are not among them: a start creates those.
 */
export function topicPlanWarnings(plan: Pick<TopicPlan, 'lowerExisting' | 'otherPartitions' | 'replicationFactor'>): StartWarning[] {
  return [lowReplicationWarning(plan.lowerExisting, plan.replicationFactor), partitionCountWarning(plan.otherPartitions)].filter(
    (w) => w !== undefined,
  );
}

/** Existing topics with fewer replicas than a start would give new ones; undefined when there are none. */
function lowReplicationWarning(lowerExisting: TopicPlan['lowerExisting'], replicationFactor: number): StartWarning | undefined {
  if (lowerExisting.length === 0) return undefined;
  return {
    fields: { topics: lowerExisting.map((t) => `${t.topic} (RF ${t.replicationFactor})`), replication: replicationFactor },
    message:
      `existing Kafka topics have fewer replicas than ${replicationFactor}: notify start never changes an existing topic; ` +
      'raise their replication with kafka-reassign-partitions, or they lose messages with their broker',
  };
}

/**
 * Existing topics with another partition count than the configuration's; undefined when there
 * are none. A warning, not a refusal: the service works with the count a topic has (keys map by
 * it, every partition is read), and the two ways to "fix" it at start are worse. Kafka cannot
 * remove partitions, and adding some moves keys to other partitions while older messages of the
 * same key still wait on the old one, so a recipient's messages could be delivered out of order.
 * Refusing would stop a fleet from restarting over a setting that only shapes new topics.
 */
function partitionCountWarning(other: TopicPlan['otherPartitions']): StartWarning | undefined {
  if (other.length === 0) return undefined;
  return {
    fields: { topics: other.map((t) => `${t.topic} (${t.partitions} partitions, configured ${t.configured})`) },
    message:
      `existing Kafka topics have another partition count than NOTIFY_TOPIC_PARTITIONS (NOTIFY_RETRY_TOPIC_PARTITIONS for delay topics) asks for: ` +
      `${other.map((t) => `${t.topic} has ${t.partitions}, configured ${t.configured}`).join('; ')}. ` +
      'notify start never changes an existing topic and uses the count it has; set the variable to match, ' +
      'or read docs/operations.md ("Topic partition counts") before adding partitions (that moves recipients to other partitions)',
  };
}
