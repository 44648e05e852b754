import { textLiteral } from './literals.js';

/** Parameters of `relayInstanceSleepingText`. */
export interface RelayInstanceSleepingParams {
  readonly instanceId: string;
  /** True: this instance is about to wait for a NOTIFY; false: it is publishing. */
  readonly sleeping: boolean;
}

/**
 * Tells the outbox trigger whether this instance waits for a wake-up, as one statement with its
 * values inlined (`literals.ts`): the claim transaction sends it in the same message as its own
 * statements (before its BEGIN, committed on its own: true; with the mark: false). The trigger
 * rings (`pg_notify`) only while some relay sleeps, because a notifying transaction takes
 * PostgreSQL's global notify lock through its commit, which serialises the commits of every
 * enqueue (migration 0002 has the numbers).
 */
export function relayInstanceSleepingText(params: RelayInstanceSleepingParams): string {
  return `UPDATE relay_instances SET sleeping = ${params.sleeping} WHERE instance_id = ${textLiteral(params.instanceId)}`;
}
