import { defineConfig } from 'vitest/config';

// Tests run the TypeScript sources of the workspace packages: their `exports` carry a
// `@notify/source` condition (the compiled `dist/` is what `node` and the packed tarballs use).
export const sourceConditions = ['@notify/source', 'module', 'node', 'development|production'];

export default defineConfig({
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: {
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
