import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources of the workspace packages: their `exports` carry a
// `@notify/source` condition (the compiled `dist/` is what `node` and the packed tarballs use).
export const sourceConditions = ['@notify/source', 'module', 'node', 'development|production'];

/**
 * Per-package floors, statements and branches in percent (README "Coverage"): what two full runs
 * on 2026-12-01 reached, rounded down. Where the two runs differed (the dispatcher's timing-driven
 * paths: branches 85.46 and 86.04), one point below the lower; contract parsing is exercised by
 * property tests with random seeds, so its floor is 99, not 100.
 */
const COVERAGE_THRESHOLDS = {
  'packages/outbox/src/**': { statements: 91, branches: 78 },
  'packages/contract/src/**': { statements: 99, branches: 99 },
  // Was 96 / 82, lowered to 93 / 82 when the endpoint-health gate came with tests of its main
  // paths only. With the gate's other paths tested (store errors, local token expiry, operator
  // disable, probe races; gate.ts 98.06 / 93.61) the providers' own tests measured 95.93 / 82.57 on
  // 2026-12-01 23:24 (`vitest run --coverage --coverage.include='packages/providers/src/**'
  // packages/providers`, load 34): statements one point below, rounded down; branches unchanged.
  'packages/providers/src/**': { statements: 94, branches: 82 },
  'packages/dispatcher/src/**': { statements: 92, branches: 84 },
};

export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
    // `pnpm test:coverage` (and `bash scripts/test.sh` without arguments) measure coverage of the
    // packages' sources. Thresholds hold the published libraries and the dispatcher at what they
    // reached when they were set (rounded down), so coverage cannot fall without a red run.
    coverage: {
      provider: 'v8',
      include: ['packages/*/src/**/*.ts', 'migrations/src/**/*.ts'],
      exclude: ['**/*.test.ts', '**/testing/**', 'packages/contract/src/schema-documents.ts'],
      reporter: ['text-summary', 'json-summary', 'html'],
      reportsDirectory: 'coverage',
      thresholds: COVERAGE_THRESHOLDS,
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          // Some unit tests compile large JSON Schemas (AsyncAPI's): 5 s was too short under load.
          testTimeout: 20_000,
          include: ['packages/*/src/**/*.test.ts', 'migrations/src/**/*.test.ts', 'bench/**/*.test.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['packages/*/test/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['test/chaos/**', '**/node_modules/**'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 90_000,
        },
      },
    ],
  },
});
