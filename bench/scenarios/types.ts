import type { ScenarioOutcome } from '../lib/report.js';
import type { Stack } from '../lib/stack.js';

/** What every scenario receives from the runner. */
export interface BenchContext {
  /** `--quick`: shorter rounds and smaller workloads; the whole run stays under 2 minutes. */
  readonly quick: boolean;
  readonly stack: Stack;
  /** Progress lines (stderr). */
  log(line: string): void;
  /** `--profile`: service children run with `--cpu-prof` into this directory. */
  readonly cpuProfDir?: string;
  /**
   * Extra environment for every `notify start` child (`--env NAME=value`, repeatable), e.g. to
   * measure NOTIFY_EVENTS=terminal against the default in two runs and compare them.
   */
  readonly serviceEnv?: Readonly<Record<string, string>>;
}

/** One benchmark scenario: a figure and the baseline it is compared with, measured in the same run. */
export interface Scenario {
  readonly name: string;
  /** One line for `pnpm bench --list`. */
  readonly description: string;
  readonly needsKafka: boolean;
  run(ctx: BenchContext): Promise<ScenarioOutcome>;
}
