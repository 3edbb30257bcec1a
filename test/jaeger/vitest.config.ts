// `pnpm test:jaeger`: the tests of test/jaeger only (they need Go, so `pnpm test` leaves them
// out); otherwise as the root vitest.config.ts.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  root: fileURLToPath(new URL('../..', import.meta.url)),
  resolve: { conditions: ['td-source'] },
  ssr: { resolve: { conditions: ['td-source'], externalConditions: ['td-source'] } },
  test: {
    reporters: process.env.TD_TEST_JSON ? ['default', ['json', { outputFile: process.env.TD_TEST_JSON }]] : ['default'],
    include: ['test/jaeger/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
