import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['td-source'] },
  ssr: { resolve: { conditions: ['td-source'], externalConditions: ['td-source'] } },
  test: {
    // CI sets TD_TEST_JSON to also get machine-readable counts (see .ci/run).
    reporters: process.env.TD_TEST_JSON ? ['default', ['json', { outputFile: process.env.TD_TEST_JSON }]] : ['default'],
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
