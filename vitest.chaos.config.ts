import { defineConfig } from 'vitest/config';
import { sourceConditions } from './vitest.config.js';

// `pnpm test:chaos`: the full fault suite (test/chaos) and the hostile-input suite (test/security)
// with many more fuzz runs, against the real stack. One file at a time: the scenarios measure
// lateness and run several `notify start` processes each, on a 2-core machine. The table of
// scenarios (lost, duplicates, max lateness) is printed at the end by the chaos reporter.
export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    include: ['test/chaos/**/*.test.ts', 'test/security/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 180_000,
    env: { FUZZ_RUNS: process.env.FUZZ_RUNS ?? '2000' },
    reporters: ['default', './test/support/chaos/table-reporter.ts'],
  },
});
