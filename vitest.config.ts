import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['td-source'] },
  ssr: { resolve: { conditions: ['td-source'], externalConditions: ['td-source'] } },
  test: {
    // CI sets TD_TEST_JSON to also get machine-readable counts (see .ci/run).
    reporters: process.env.TD_TEST_JSON ? ['default', ['json', { outputFile: process.env.TD_TEST_JSON }]] : ['default'],
    include: ['packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    // The Jaeger test needs Go: `pnpm test:jaeger` runs it (test/jaeger/vitest.config.ts).
    exclude: [...configDefaults.exclude, 'test/jaeger/**'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at once even on 2 vCPUs (vitest's default is one fewer than the CPUs: 1 here, and
    // most files wait on processes, Redis and timers, not the CPU): the suite's wall time nearly halves.
    maxWorkers: 2,
  },
});
