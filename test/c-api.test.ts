/**
 * The C API (native/include/amrgrav.h, libamrgrav): a C program (test/c/capi_demo.c) links the library the
 * package builds, solves random cells, and checks the tree against its own direct sum and the error paths.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { scaledTimeout } from './helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libDir = join(root, 'build', 'Release');
const mpicc = spawnSync('mpicc', ['--version'], { stdio: 'ignore' }).status === 0;

describe('C API', () => {
  it('a C program computes the potential through libamrgrav, matching its own direct sum, and gets clear errors', () => {
    expect(existsSync(join(libDir, 'libamrgrav.so')), `libamrgrav.so in ${libDir} (built by npm install)`).toBe(true);
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_demo');
    execFileSync('cc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_demo.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.maxRelPotentialError).toBeLessThan(1e-4); // theta 0.3, order 2 against direct summation
    expect(out.maxAccelerationErrorOverMax).toBeLessThan(1e-2);
    expect(out.interactionsPerCell).toBeGreaterThan(0);
    expect(out.badMass).toBe(1); // AMRGRAV_INVALID_INPUT
    expect(out.badMassMessage).toBe(
      'cell 17: mass is negative (got -1); signed masses (a density contrast) need a fully periodic box with densityContrast',
    );
    expect(out.recovered).toBe(0);
    expect(out.nullArrays).toBe(1);
    expect(out.empty).toBe(0);
    expect(out.badTheta).toBe(2); // AMRGRAV_INVALID_OPTION
    expect(out.badThetaMessage).toMatch(/theta must be in \(0, 1\]/);
    expect(out.periodicNoBox).toBe(2); // periodic needs the box: AMRGRAV_INVALID_OPTION
    expect(out.periodicShiftError).toBeLessThan(1e-3); // a periodic potential moves with its masses
    expect(out.periodicBackend).toBe(1); // AUTO on a machine without a GPU: the CPU backend
    // the lattice self term: minus the cubic lattice's Ewald C(0) (test/self-potential.test.ts checks it independently)
    expect(Math.abs(out.latticeCoefficient - 2.837297479)).toBeLessThan(1e-9);
    expect(out.badSelf).toBe(2); // self_potential 3: AMRGRAV_INVALID_OPTION
    // coincident cells and overflowing masses are refused, naming the cells and the mass (item 8 of issue 15)
    expect(out.coincident).toBe(1);
    expect(out.coincidentMessage).toMatch(/^cells 3 and 40 have the same centre/);
    expect(out.huge).toBe(1);
    expect(out.hugeMessage).toMatch(/masses are too large for double precision/);
    // a NULL solver: a status and a message for amrgrav_last_error(NULL) (thread-local)
    expect(out.nullSolver).toBe(1);
    expect(out.nullSolverMessage).toMatch(/amrgrav_compute_potential: the solver is NULL/);
    expect(out.nullSolverStats).toBe(1);
    expect(out.nullStatsMessage).toMatch(/amrgrav_get_stats: the solver is NULL/);
    expect(out.densityContrastDefault).toBe(1); // fully periodic boxes solve for the density contrast (issue #21)
    expect(out.signedWithContrast).toBe(0); // signed masses accepted there
    expect(out.signedWithout).toBe(1); // density_contrast 0: a negative mass is AMRGRAV_INVALID_INPUT
    expect(out.ok).toBe(true);
  });

  it('version, build info, walk and ewald_expansion, older structs, checks at create, OMP_NUM_THREADS, cache warning (issue #19)', () => {
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_options');
    execFileSync('cc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_options.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.version).toBe(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version);
    expect(out.features & 1).toBe(1);
    expect(out.cudaBuilt).toBe((out.features >> 1) & 1);
    expect(out.mpiBuilt).toBe((out.features >> 3) & 1);
    expect(out.smallUntouched).toBe(1); // an older caller's smaller amrgrav_build_info: nothing written past it
    expect(out.threadsFromOmp).toBe(3); // threads 0 = OMP_NUM_THREADS's first number ("3,1")
    expect(out.ompWarning).toMatch(/^OMP_NUM_THREADS='many' is not a positive integer/);
    expect(out.defaultWalk).toBe(0);
    expect(out.defaultExpansion).toBe(1);
    expect(out.oldStructSame).toBe(1); // a caller of the previous header: same potential, bit for bit
    expect(out.interactionsVote).toBeLessThan(out.interactionsBox);
    expect(out.voteVsBox).toBeLessThan(1e-3);
    expect(out.badWalk).toBe(2);
    expect(out.cacheWarning).toMatch(/could not be cached on disk: cannot create the cache directory/);
    expect(out.cacheWarningAgain).toBe(''); // the table is in memory now: nothing rebuilt, nothing to say
    expect(out.expansionVsPairs).toBeGreaterThan(0); // the option reaches the walk...
    expect(out.expansionVsPairs).toBeLessThan(1e-4); // ...and changes the potential by ~1e-6
    expect(out.aspect).toBe(2); // the box's shape fails at create now
    expect(out.aspectMessage).toMatch(/aspect ratio 32/);
    expect(out.tooFine).toBe(2);
    expect(out.commNotDistributed).toBe(2);
    expect(out.commNull).toBe(1);
    expect(out.ok).toBe(true);
  });

  it("method 1 (the FMM, issue #20): defaults, accuracy (isolated and a sheet), an older struct, bad methods and orders refused at create", () => {
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_fmm');
    execFileSync('cc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_fmm.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.defaults).toBe(1);
    expect(out.fmm).toBe(0);
    expect(out.fmmVsFine).toBeLessThan(2e-5); // against the tree at theta 0.1
    expect(out.fmmVsFine).toBeLessThan(out.treeVsFine);
    expect(out.oldSame).toBe(1); // a caller of the previous header: the tree, bit for bit
    // backend CUDA with method 1 in a periodic box: made (the GPU's periodic FMM, native/tools/parity/
    // fmm_periodic.cpp) where a GPU is usable, NO_DEVICE where none is
    expect(out.cuda).toBe(out.cudaUsable ? 0 : 4);
    expect(out.sheet).toBe(0); // a sheet (x, y periodic) solves: test/fmm-sheet.test.ts
    expect(out.sheetVsFine).toBeLessThan(1e-5); // against the tree at theta 0.2, of max |phi|
    expect(out.badMethod).toBe(2);
    expect(out.badOrder).toBe(2);
    expect(out.badAccel).toBe(2); // fmm_accel_tolerance -1
    expect(out.olderAccel).toBe(0); // a caller of the previous header: the field is not read
    expect(out.ok).toBe(true);
  });

  const commTitle = "the caller's MPI communicator (amrgrav_set_communicator): the world, a split into halves, MPI_COMM_SELF, under mpirun -np 4";
  it.skipIf(!mpicc)(mpicc ? commTitle : `skipped: mpicc is not installed (apt-get install libopenmpi-dev, as .ci/run does): ${commTitle}`, () => {
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_comm');
    execFileSync('mpicc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_comm.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const stdout = execFileSync('mpirun', ['--allow-run-as-root', '--oversubscribe', '-np', '4', exe], {
      encoding: 'utf8',
      timeout: scaledTimeout(240_000),
    });
    const out = JSON.parse(stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop() ?? '{}');
    expect(out.ranks).toBe(4);
    // against one process's solve of the same cells: the distributed walk's LETs differ by the tree's error only
    expect(out.world).toBeGreaterThan(0); // (a collective really ran)
    expect(out.world).toBeLessThan(1e-3);
    expect(out.halves).toBeGreaterThan(0); // two ranks per half, each half its own cells: a collective per half
    expect(out.halves).toBeLessThan(1e-3);
    expect(out.self).toBe(0); // a communicator of one rank: the local solve itself
    expect(out.nullCommunicator).toBe(1); // MPI_COMM_NULL: AMRGRAV_INVALID_INPUT
    expect(out.ok).toBe(true);
  });
});
