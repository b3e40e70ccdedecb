/**
 * Hydro codes in their own language (issue #19): the Fortran module (native/include/amrgrav.f90) compiled with
 * gfortran, in docs/coupling.md's FLASH-style worked example (test/fortran/flash_gravity.f90): a block loop over a
 * guard-celled PARAMESH-like mesh against direct summation. It links the libamrgrav the package builds, as
 * test/c-api.test.ts does. (The C++ worked example: test/cpp-coupling.test.ts.)
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
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;

function has(exe: string): boolean {
  return spawnSync(exe, ['--version'], { stdio: 'ignore' }).status === 0;
}
const gfortran = has('gfortran');
const mpifort = gfortran && has('mpifort');

const flashTitle = 'a FLASH-style Gravity unit: leaf blocks with guard cells gathered, solved, scattered into unk, against direct summation';

describe('Fortran module (gfortran)', () => {
  // skipped only where gfortran is missing, and the title then says so
  it.skipIf(!gfortran)(gfortran ? flashTitle : `skipped: gfortran is not installed (apt-get install gfortran, as .ci/run does): ${flashTitle}`, () => {
    expect(existsSync(join(libDir, 'libamrgrav.so')), `libamrgrav.so in ${libDir} (built by npm install)`).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'amrgrav-f-'));
    const exe = join(dir, 'flash_gravity');
    execFileSync('gfortran', [
      '-std=f2008', '-O2', '-Wall', '-Wextra', '-Werror', '-J', dir,
      join(root, 'native', 'include', 'amrgrav.f90'),
      join(root, 'test', 'fortran', 'flash_gravity.f90'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
      '-o', exe,
    ], { cwd: dir });
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.cells).toBe(22 * 512); // 6 level-1 leaves + 16 level-2 leaves of 8^3 cells; 2 parents skipped
    expect(out.leafBlocks).toBe(22);
    expect(out.blocks).toBe(24);
    // the tree at theta 0.5, order 2, against the Fortran direct sum with the lattice self term: measured 7.8e-5
    expect(out.maxRelError).toBeLessThan(out.tolerance);
    expect(out.tolerance).toBeLessThanOrEqual(1e-3);
    expect(out.guardsIntact).toBe(true); // the guard cells (NaN) are never read nor written
    expect(out.fortranOptionsBytes).toBe(out.optionsBytes); // the bind(C) type is the C struct
    expect(out.version).toBe(version);
    expect(out.mismatch).toBe(1); // arrays of different lengths: AMRGRAV_INVALID_INPUT from the module
    expect(out.mismatchMessage).toMatch(/must have size\(x\) = 11264 elements/);
    expect(out.nonCubic).toBe(1);
    expect(out.nonCubicMessage).toMatch(/non-cubic cells .*not supported/);
    expect(out.badTheta).toBe(2);
    expect(out.badThetaMessage).toMatch(/theta must be in \(0, 1\]/);
    expect(out.aspect).toBe(2); // the periodic box's shape, refused at create
    expect(out.aspectMessage).toMatch(/aspect ratio 32/);
    // the block entry (issue #17) on unk in place: bitwise the gathered solve, guards and the density variable of
    // the output array untouched, the tree kept on the second call, the bind(C) type the C struct's size
    expect(out.blocksStatus).toBe(0);
    expect(out.blocksSameBits).toBe(out.cells);
    expect(out.blocksMaxRelDiff).toBe(0);
    expect(out.blocksGuardsIntact).toBe(true);
    expect(out.blocksTreeReused).toBe(1);
    expect(out.fortranBlocksBytes).toBe(out.blocksBytes);
    expect(out.ok).toBe(true);
  });

  const systemTitle = 'the system solve (amrgrav_solve_system): probes on cell centres, 1-based targets bitwise the full solve';
  it.skipIf(!gfortran)(gfortran ? systemTitle : `skipped: gfortran is not installed: ${systemTitle}`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'amrgrav-fs-'));
    const exe = join(dir, 'system_probes');
    execFileSync('gfortran', [
      '-std=f2008', '-O2', '-Wall', '-Wextra', '-Werror', '-J', dir,
      join(root, 'native', 'include', 'amrgrav.f90'),
      join(root, 'test', 'fortran', 'system_probes.f90'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
      '-o', exe,
    ], { cwd: dir });
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.status).toBe(0);
    expect(out.centreGap).toBeLessThan(1e-14); // direct, self term off: a probe on a centre is that cell's potential
    expect(out.probeErr).toBeLessThan(1e-12); // direct at probes off the cells: the program's own sum
    expect(out.subsetStatus).toBe(0);
    expect(out.bitwise).toBe(out.targets);
    expect(out.mismatch).toBe(1);
    expect(out.mismatchMessage).toMatch(/potential one per cell \(or per target\)/);
  });

  const particlesTitle = 'the system solve with particles: Plummer per particle against the program\'s sum, the tree, one softening for all';
  it.skipIf(!gfortran)(gfortran ? particlesTitle : `skipped: gfortran is not installed: ${particlesTitle}`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'amrgrav-fp-'));
    const exe = join(dir, 'system_particles');
    execFileSync('gfortran', [
      '-std=f2008', '-O2', '-Wall', '-Wextra', '-Werror', '-J', dir,
      join(root, 'native', 'include', 'amrgrav.f90'),
      join(root, 'test', 'fortran', 'system_particles.f90'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
      '-o', exe,
    ], { cwd: dir });
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.status).toBe(0);
    expect(out.directErr).toBeLessThan(1e-12); // direct summation: the program's own Plummer sum
    expect(out.treeStatus).toBe(0);
    expect(out.treeErr).toBeGreaterThan(0);
    expect(out.treeErr).toBeLessThan(1e-3);
    expect(out.oneStatus).toBe(0);
    expect(out.eachStatus).toBe(0);
    expect(out.same).toBe(out.particles);
    expect(out.mismatch).toBe(1);
    expect(out.mismatchMessage).toMatch(/particle_mass and particle_potential must have size\(particle_x\) elements/);
  });

  const splitTitle = "a Fortran MPI code's own communicator (amrgrav_set_communicator with use mpi's integer handle): the world split in halves, mpirun -np 4";
  it.skipIf(!mpifort)(mpifort ? splitTitle : `skipped: mpifort is not installed (apt-get install libopenmpi-dev gfortran, as .ci/run does): ${splitTitle}`, () => {
    const dir = mkdtempSync(join(tmpdir(), 'amrgrav-fmpi-'));
    const exe = join(dir, 'comm_split');
    execFileSync('mpifort', [
      '-std=f2008', '-O2', '-Wall', '-Wextra', '-Werror', '-J', dir,
      join(root, 'native', 'include', 'amrgrav.f90'),
      join(root, 'test', 'fortran', 'comm_split.f90'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
      '-o', exe,
    ], { cwd: dir });
    const stdout = execFileSync('mpirun', ['--allow-run-as-root', '--oversubscribe', '-np', '4', exe], {
      encoding: 'utf8',
      timeout: scaledTimeout(240_000),
    });
    const out = JSON.parse(stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop() ?? '{}');
    expect(out.ranks).toBe(4);
    expect(out.halfRanks).toBe(2);
    expect(out.halves).toBeGreaterThan(0); // a collective over each half ran (LETs: the tree's error vs one process)
    expect(out.halves).toBeLessThan(1e-3);
    expect(out.ok).toBe(true);
  });
});
