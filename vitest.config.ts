import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { conditions: ['td-source'] },
  ssr: { resolve: { conditions: ['td-source'], externalConditions: ['td-source'] } },
  test: {
    // CI sets TD_TEST_JSON to also get machine-readable counts (see .ci/run).
    reporters: process.env.TD_TEST_JSON ? ['default', ['json', { outputFile: process.env.TD_TEST_JSON }]] : ['default'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two files at once even on 2 vCPUs (vitest's default is one fewer than the CPUs: 1 here, and
    // most files wait on processes, Redis and timers, not the CPU): the suite's wall time nearly halves.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['packages/*/src/**/*.test.ts'],
          // The packages' own tests share a process per worker (their modules imported once, not per
          // file): 75 s → 33 s here. Each file builds what it uses; none relies on a fresh module.
          isolate: false,
        },
      },
      {
        extends: true,
        test: {
          name: 'system',
          include: ['test/**/*.test.ts'],
          // The Jaeger test needs Go: `pnpm test:jaeger` runs it (test/jaeger/vitest.config.ts).
          exclude: [...configDefaults.exclude, 'test/jaeger/**'],
        },
      },
    ],
  },
});
