import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 300_000,
    hookTimeout: 300_000,
    pool: 'forks',
    // the JSON report feeds the closing "N passed, N failed" line of .ci/run
    reporters: ['default', ['json', { outputFile: 'test-results.json' }]],
  },
});
