// The native host tests that no other vitest file runs (CTest label cpu; CI runs npm test alone): the GPU's periodic
// FMM and staged M2L emulated on the host against the CPU (native/tests/fmm_periodic_device.cpp,
// fmm_m2l_staged.cpp), the harmonic M2L on the CPU and emulated for the GPU against the full Cartesian one
// (fmm_m2l_harmonic.cpp), the GPU near field's single-precision pairs emulated against double sums
// (fmm_near_single.cpp), the threaded Morton sort against one thread and std::stable_sort (sort_keys.cpp), the block
// entry's element tables against the layout's definition (block_elements.cpp) and softened particles in the system
// solve against a float64 softened direct sum (particles_system.cpp).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

import { hostTest } from './hostTests.js';

function run(name: string, timeoutMs: number) {
  return spawnSync(hostTest(name), [], { encoding: 'utf8', timeout: timeoutMs });
}

describe('native host tests', () => {
  it('fmm_periodic_device.cpp: the GPU periodic FMM emulated = the CPU FMM', () => {
    const r = run('amrgrav_fmm_periodic_device', 900_000);
    expect(r.stdout).toMatch(/PASS periodic-sine32-emulated-vs-cpu/);
    expect(r.stdout).toMatch(/12 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('fmm_m2l_staged.cpp: the staged M2L emulated lane by lane = the CPU per pair; its banks conflict-free', () => {
    const r = run('amrgrav_fmm_m2l_staged', 120_000);
    expect(r.stdout).toMatch(/PASS m2l-staged-layout-banks/);
    expect(r.stdout).toMatch(/162 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('fmm_m2l_harmonic.cpp: the harmonic M2L (folded multipoles), CPU and device emulated = the full Cartesian M2L', () => {
    const r = run('amrgrav_fmm_m2l_harmonic', 120_000);
    expect(r.stdout).toMatch(/PASS harmonic M2L p7 no dipoles/);
    expect(r.stdout).toMatch(/PASS device harmonic M2L p7 dipoles/);
    expect(r.stdout).toMatch(/35 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('fmm_near_single.cpp: the GPU near field\'s single-precision pairs emulated = double sums to 1e-6', () => {
    const r = run('amrgrav_fmm_near_single', 120_000);
    expect(r.stdout).toMatch(/PASS near-single-pairs-positive/);
    expect(r.stdout).toMatch(/PASS near-single-pairs-signed/);
    expect(r.stdout).toMatch(/PASS near-single-mass-range/);
    expect(r.stdout).toMatch(/4 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('sort_keys.cpp: the threaded Morton sort = one thread = std::stable_sort', () => {
    const r = run('amrgrav_sort_keys', 120_000);
    expect(r.stdout).toMatch(/PASS random-2-threads/);
    expect(r.stdout).toMatch(/16 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('block_elements.cpp: the block entry\'s element tables = the layout\'s definition', () => {
    const r = run('amrgrav_block_elements', 120_000);
    expect(r.stdout).toMatch(/PASS every-cell-8x8x8-plain/);
    expect(r.stdout).toMatch(/6 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('particles_system.cpp: softened particles against a float64 softened direct sum', () => {
    const r = run('amrgrav_particles_system', 300_000);
    expect(r.stdout).toMatch(/PASS a\. tree theta 0\.05 vs softened direct sum/);
    expect(r.stdout).toMatch(/68 checks, 0 failed/);
    expect(r.status).toBe(0);
  });
});
