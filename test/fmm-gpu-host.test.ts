// The CUDA backend's FMM pieces that are made or fixed on the host, checked without a GPU: the P2P tiles
// (native/tests/fmm_p2p_tiles.cpp: each regular leaf's near list in the tiles, and a host emulation of the device's
// P2P kernels against the CPU's near field), the tensor-core table step's lanes (native/tests/fmm_p2p_mma.cpp: one
// block's DMMA pieces emulated against a triple loop, the accelerations' d K^3 pieces too), the L2P's compile-time term tables
// (native/tests/fmm_terms.cpp) and the device's breadth-first dual walk for the interaction lists in its host
// emulation (native/tests/fmm_dual_walk.cpp), and the device's near lists and P2P tiles from its P2P pairs in their
// host emulation, with the lane rules its warps run (native/tests/fmm_device_tiles.cpp), and the device's tree upward
// pass in its host emulation (native/tests/fmm_upward.cpp), and the periodic path's signed scale from the device's
// cells in its host emulation (native/tests/fmm_signed_scale.cpp), and the study's tensor-core M2L of lattice nodes
// emulated lane by lane against the CPU's per-pair M2L (native/tests/fmm_m2l_mma.cpp).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

import { hostTest } from './hostTests.js';

describe('method fmm on the CUDA backend: the host side of its kernels', () => {
  it('native/tests/fmm_p2p_tiles.cpp: tiles hold every regular leaf\'s near list; emulated kernels = the CPU to 1e-14', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_p2p_tiles'), [], { encoding: 'utf8', timeout: 300_000 });
    expect(r.stdout).toMatch(/PASS uniform32-all-tables/);
    expect(r.stdout).toMatch(/PASS refined32-mixed/);
    expect(r.stdout).toMatch(/PASS refined32-emulated-vs-cpu/);
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_p2p_mma.cpp: DMMA lanes = the PTX table; an emulated block = a triple loop to 1e-14, accelerations too', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_p2p_mma'), [], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout).toMatch(/PASS dmma-layout/);
    expect(r.stdout).toMatch(/PASS mma-cover/);
    expect(r.stdout).toMatch(/PASS mma-product-seed1/);
    expect(r.stdout).toMatch(/PASS mma-accel-product-seed6/);
    expect(r.stdout).toMatch(/9 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_dual_walk.cpp: the breadth-first walk\'s lists = buildInteractionLists\'s, every array', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_dual_walk'), [], { encoding: 'utf8', timeout: 300_000 });
    expect(r.stdout).toMatch(/PASS uniform32-p7-tol2e-4-lists: every array equal/);
    expect(r.stdout).toMatch(/PASS amr-p3-tol2e-4-coverage: 0 leaf pairs/);
    expect(r.stdout).toMatch(/PASS plummer-p7-tol0-lists: every array equal/);
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_device_tiles.cpp: the device\'s near lists and P2P tiles (emulated) = buildP2pTiles\'s, every array', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_device_tiles'), [], { encoding: 'utf8', timeout: 300_000 });
    expect(r.stdout).toMatch(/PASS uniform32-p5-tol2e-4: every array equal/);
    expect(r.stdout).toMatch(/PASS uniform22-p3-tol2e-4: every array equal/);
    expect(r.stdout).toMatch(/PASS amr-p5-tol2e-4: every array equal/);
    expect(r.stdout).toMatch(/PASS plummer-p3-tol0: every array equal/);
    expect(r.stdout).toMatch(/PASS lane-rules: 200 random sets/);
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_upward.cpp: the device\'s upward pass (emulated) = buildFmmTree\'s, every array by bits', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_upward'), [], { encoding: 'utf8', timeout: 300_000 });
    expect(r.stdout).toMatch(/PASS uniform24-p7: every array equal by bits/);
    expect(r.stdout).toMatch(/PASS amr-p7: every array equal by bits/);
    expect(r.stdout).toMatch(/PASS plummer-p3: every array equal by bits/);
    expect(r.stdout).toMatch(/PASS mutation-seen: reversed leaf sums differ in (\d+) of \1 cases/);
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_signed_scale.cpp: the signed scale from the device\'s cells (emulated) = signedSourceScale by bits', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_signed_scale'), [], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stdout).toMatch(/PASS periodic-uniform32-scale-bitwise: .*equal by bits/);
    expect(r.stdout).toMatch(/PASS periodic-sine32-scale-bitwise: .*equal by bits/);
    expect(r.stdout).toMatch(/PASS periodic-constant16-scale-bitwise: .*1 candidate leaves of 64 down/);
    expect(r.stdout).toMatch(/PASS periodic-amr-margins: 0 leaves outside their margin/);
    expect(r.stdout).toMatch(/PASS sheet-xy-uniform32-scale-bitwise: .*equal by bits/);
    // the AMR mesh has leaves above level 2: the GPU takes the host's path, whose scale is the host function's
    expect(r.stdout).toMatch(/PASS line-z-amr-host-scale: /);
    expect(r.stdout).toMatch(/note line-z-amr: leaves above level 2, the GPU takes the host's path/);
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_terms.cpp: the constexpr term tables = fmm/multi_index.h at orders 3..7', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_terms'), [], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stdout).toMatch(/PASS order7: 120 terms/);
    expect(r.stdout).toMatch(/5 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/fmm_m2l_mma.cpp: the tensor-core M2L covers every product once; emulated = the CPU per pair', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_m2l_mma'), [], { encoding: 'utf8', timeout: 120_000 });
    expect(r.stdout).toMatch(/PASS plan-p7: 1716 products in 77 pieces/);
    expect(r.stdout).toMatch(/PASS m2l-mma-p7-tiles16: .*gathered pieces the same/);
    expect(r.stdout).toMatch(/15 checks, 0 failed/);
    expect(r.status).toBe(0);
  });
});
