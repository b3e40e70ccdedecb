/**
 * The system solve of the C API (issue #18): a C program (test/c/capi_system.c) calls amrgrav_solve_system on the CPU
 * backend with cells, probes and a subset of targets, and checks them against its own direct sum and against
 * amrgrav_compute_potential (bitwise at the targets), and the error paths.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libDir = join(root, 'build', 'Release');

describe('C API system solve', () => {
  it('amrgrav_solve_system: probes within the tree error, on cell centres the cells, a subset bitwise', () => {
    expect(existsSync(join(libDir, 'libamrgrav.so')), `libamrgrav.so in ${libDir} (built by npm install)`).toBe(true);
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_system');
    execFileSync('cc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror', '-ffp-contract=off',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_system.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.ok).toBe(true);
    expect(out.treeStatus).toBe(0);
    expect(out.cellErr).toBeGreaterThan(0);
    expect(out.probeErr).toBeLessThan(2 * out.cellErr); // the probes' tree error is the cells'
    expect(out.directStatus).toBe(0);
    expect(out.directErr).toBeLessThan(1e-12);
    expect(out.centreGap).toBeLessThan(1e-14); // direct, self term off: a probe on a centre is that cell
    expect(out.subsetStatus).toBe(0);
    expect(out.bitwise).toBe(out.targets);
    expect(out.subsetInteractions).toBeGreaterThan(0);
    expect(out.nanStatus).toBe(1);
    expect(out.nanMessage).toMatch(/^probe 3: x is not finite/);
    expect(out.repeatStatus).toBe(1);
    expect(out.repeatMessage).toMatch(/^targets\[2\] = 5 repeats targets\[0\]/);
    expect(out.rangeStatus).toBe(1);
    expect(out.rangeMessage).toMatch(/^targets\[2\] = 1728 is not a cell index/);
    expect(out.sizeStatus).toBe(2);
  });
});

describe('C API system solve with particles', () => {
  it('amrgrav_solve_system: particles against a softened sum in C, the tree, older struct sizes, errors', () => {
    expect(existsSync(join(libDir, 'libamrgrav.so')), `libamrgrav.so in ${libDir} (built by npm install)`).toBe(true);
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_particles');
    execFileSync('cc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror', '-ffp-contract=off',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_particles.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.ok).toBe(true);
    // Plummer, softening per particle, direct summation: this program's sum to rounding
    expect(out.plummerStatus).toBe(0);
    expect(out.plummerErr).toBeLessThan(1e-12);
    expect(out.plummerProbeErr).toBeLessThan(1e-12);
    expect(out.momentumGap).toBeLessThan(1e-12); // every pair's forces cancel
    expect(out.treeStatus).toBe(0);
    expect(out.treeErr).toBeGreaterThan(0);
    expect(out.treeErr).toBeLessThan(1e-3);
    // the options struct before particles: the spline kernel; one softening for all
    expect(out.oldCreate).toBe(0);
    expect(out.splineStatus).toBe(0);
    expect(out.splineErr).toBeLessThan(1e-12);
    expect(out.onParticleGap).toBeLessThan(1e-12); // a probe on a particle: its softened m / eps included
    // the system structs before particles: accepted, the same cells bitwise
    expect(out.cellsNew).toBe(0);
    expect(out.cellsOld).toBe(0);
    expect(out.oldBitwise).toBe(out.cells);
    expect(out.oldResultsStatus).toBe(2);
    expect(out.oldResultsMessage).toMatch(/older struct without the particles' results/);
    expect(out.negStatus).toBe(1);
    expect(out.negMessage).toMatch(/^particle 3: mass is negative/);
    expect(out.zeroEpsStatus).toBe(1);
    expect(out.zeroEpsMessage).toMatch(/softening length must be finite and positive/);
    expect(out.nullStatus).toBe(1);
    expect(out.badKernelStatus).toBe(2);
  });
});
