/**
 * The fuzz suite of issue 15 (bench/fuzzFlash.ts, seeded): a few hundred mutated FLASH files (byte flips,
 * truncations, shape and value lies) solved and plotted, and bad command lines. Zero crashes (untyped errors or
 * dead processes), zero hangs, zero meaningless files accepted, inputs unchanged, nothing left behind. The
 * harness's own detection is checked first: each kind of failure, injected into one case, is seen.
 * The table of bench/RESULTS.md comes from `node dist/bench/fuzzFlash.js` (the same run).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fuzzFailures, fuzzTable, runFuzz, type Outcome } from '../bench/fuzzFlash.js';

describe('the fuzz harness sees failures', () => {
  afterEach(() => {
    delete process.env.AMRGRAV_FUZZ_SELFTEST;
  });
  const cases: [string, (r: Awaited<ReturnType<typeof runFuzz>>['cases'][number]) => void][] = [
    ['throw', (c) => expect(c.outcome).toBe<Outcome>('crash')],
    ['exit', (c) => expect(c.outcome).toBe<Outcome>('crash')],
    ['hang', (c) => expect(c.outcome).toBe<Outcome>('hang')],
    ['modify', (c) => expect(c.inputModified).toBe(true)],
    ['leave', (c) => expect(c.leftBehind).toEqual(['.out.h5.123.tmp'])],
  ];
  for (const [mode, check] of cases) {
    it(`an injected '${mode}' in case 0 is reported; case 1 runs normally after it`, async () => {
      process.env.AMRGRAV_FUZZ_SELFTEST = mode;
      // a 5 s watchdog only for the injected endless loop (a real case takes well under a second)
      const report = await runFuzz({ seed: 15, files: 2, cli: false, caseTimeoutS: mode === 'hang' ? 5 : 600 });
      expect(report.cases.map((c) => c.index)).toEqual([0, 1]);
      check(report.cases[0]);
      expect(fuzzFailures(report).map((c) => c.index)).toEqual([0]);
    });
  }
});

describe('fuzzing the file handling (seed 15)', () => {
  it('300 mutated files and 46 bad command lines: no crash, hang, silently wrong result, modified input or stray file', async () => {
    const report = await runFuzz({ seed: 15, files: 300 });
    console.log(fuzzTable(report));
    expect(report.cases.length).toBeGreaterThanOrEqual(346);
    expect(fuzzFailures(report)).toEqual([]);
    const typed = report.cases.filter((c) => c.outcome === 'typed').length;
    expect(typed).toBeGreaterThan(250); // most mutations must be refused, not silently absorbed
  });
});
