import { CliError } from './cli-error.js';

/** The parts `notify start` can run; any subset, so each can be scaled out on its own. */
export const ROLES = ['api', 'relay', 'dispatcher'] as const;
/** One role. */
export type Role = (typeof ROLES)[number];

/** Parses `--roles api,relay`; throws a usage `CliError` naming an unknown role. */
export function parseRoles(value: string | undefined): readonly Role[] {
  if (value === undefined) return ROLES;
  const roles = value
    .split(',')
    .map((r) => r.trim())
    .filter(Boolean);
  const unknown = roles.filter((r) => !(ROLES as readonly string[]).includes(r));
  if (unknown.length > 0 || roles.length === 0) {
    throw new CliError(
      `--roles: unknown role ${unknown.map((u) => `"${u}"`).join(', ') || '(none given)'}; expected a comma-separated subset of ${ROLES.join(',')}`,
      2,
    );
  }
  return ROLES.filter((r) => roles.includes(r));
}

/** Whether `roles` need Kafka: the relay publishes to it and the dispatcher consumes from it; the API alone does not. */
export function needsKafka(roles: readonly Role[]): boolean {
  return roles.includes('relay') || roles.includes('dispatcher');
}
