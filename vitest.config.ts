import { defineConfig } from 'vitest/config';

// AMRGRAV_TEST_TIMEOUT_SCALE (test/helpers.ts timeoutScale) stretches every limit on a slow or busy machine
const scale = Number(process.env.AMRGRAV_TEST_TIMEOUT_SCALE) > 0 ? Number(process.env.AMRGRAV_TEST_TIMEOUT_SCALE) : 1;

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 600_000 * scale,
    hookTimeout: 600_000 * scale,
    pool: 'forks',
    // the JSON report feeds the closing "N passed, N failed" line of .ci/run
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
