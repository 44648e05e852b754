import { expect } from 'vitest';
import type { ChaosRow } from './audit.js';
import type { ScenarioResult } from './scenario.js';

/** The part of a vitest test context this needs (`({ task }) => …`). */
interface TaskLike {
  readonly meta: object;
}

/**
 * Attaches the scenario's row to the test (the chaos table reporter prints it at the end of the
 * run), prints the timeline and the seed, then asserts the promise: nothing lost, every audit
 * invariant kept, no process of the stack died by itself.
 */
export function expectNothingLost(task: TaskLike, result: ScenarioResult): void {
  (task.meta as { chaos?: ChaosRow }).chaos = result.report.row;
  const { row, problems } = result.report;
  const dup = [...result.report.duplicated.values()];
  console.info(
    [
      `[chaos] ${row.scenario} (seed ${result.seed}; replay with CHAOS_SEED=${result.seed})`,
      `  ${row.notifications} notifications: ${row.sent} sent, ${row.dead} dead, ${row.waiting} waiting, lost ${row.lost}, ` +
        `duplicates ${row.duplicates}${dup.length ? ` (on ${dup.length} ids, at most ${Math.max(...dup)}× each; ${row.redelivered} without a failed attempt)` : ''}, max lateness ${row.maxLatenessMs} ms`,
      ...result.timeline.map((l) => `  ${l}`),
      ...problems.slice(0, 30).map((p) => `  PROBLEM ${p}`),
      ...result.crashed.map((c) => `  CRASHED ${c}`),
    ].join('\n'),
  );
  expect(result.crashed, 'processes of the stack that died by themselves').toEqual([]);
  expect(problems, 'audit problems').toEqual([]);
  expect(row.lost).toBe(0);
}
