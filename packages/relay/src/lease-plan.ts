/** Input of `planLeases`: what one relay instance knows after its heartbeat. */
export interface LeasePlanInput {
  /** This instance. */
  readonly instanceId: string;
  /** Ids of the live instances (this one included), in any order. */
  readonly liveInstances: readonly string[];
  /** Number of hash slots (rows of `relay_leases`). */
  readonly slotCount: number;
  /** Slots this instance holds now. */
  readonly held: readonly number[];
}

/** What one instance should do with its leases. */
export interface LeasePlan {
  /** Its fair share of the slots. */
  readonly target: number;
  /** Slots to give up (the highest ones it holds), when it holds more than its share. */
  readonly release: readonly number[];
  /** How many free or expired slots to try to take, when it holds fewer. */
  readonly acquire: number;
}

/**
 * The fair share of each instance: the live instances sorted by id split `slotCount` slots as
 * evenly as possible, the first `slotCount mod n` getting one more. Every instance computes the
 * same split from the same live set, so they converge without talking to each other; assignment
 * is sticky (an instance keeps the slots it has and only gives up or takes the difference), so a
 * join or a leave moves about `slotCount / n` slots, not all of them. Pure.
 */
export function planLeases({ instanceId, liveInstances, slotCount, held }: LeasePlanInput): LeasePlan {
  const live = [...new Set([...liveInstances, instanceId])].sort();
  const index = live.indexOf(instanceId);
  const base = Math.floor(slotCount / live.length);
  const target = base + (index < slotCount % live.length ? 1 : 0);
  if (held.length > target) {
    const release = [...held].sort((a, b) => b - a).slice(0, held.length - target);
    return { target, release, acquire: 0 };
  }
  return { target, release: [], acquire: target - held.length };
}
