/**
 * The block entry of the C API (issue #17): a C program (test/c/capi_blocks.c) passes a FLASH-like unk array (var
 * fastest, guard cells, leaf blocks at scattered slots) to amrgrav_compute_blocks on the CPU backend and checks it
 * against the cell entry (bitwise), its own direct sum, the untouched guard cells, reuse between steps and the
 * error paths.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libDir = join(root, 'build', 'Release');

describe('C API block entry', () => {
  it('amrgrav_compute_blocks reads unk in place and writes the potential into it, bitwise the cell entry', () => {
    expect(existsSync(join(libDir, 'libamrgrav.so')), `libamrgrav.so in ${libDir} (built by npm install)`).toBe(true);
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-c-')), 'capi_blocks');
    execFileSync('cc', [
      '-std=c99', '-O2', '-Wall', '-Wextra', '-Werror', '-ffp-contract=off',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'c', 'capi_blocks.c'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`, '-lm',
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.ok).toBe(true);
    expect(out.cells).toBe(15 * 512);
    // the block entry is the cell entry on the cells made with the documented formula: bit for bit, potential and
    // accelerations
    expect(out.bitwise).toBe(out.cells);
    expect(out.maxDiff).toBe(0);
    expect(out.touchedOutside).toBe(0); // guard cells, other variables and other slots keep their values
    expect(out.maxRelError).toBeLessThan(1e-4); // theta 0.3, order 2, against the program's own direct sum
    // reuse between steps: the tree is kept for new densities on the same mesh, and the result is a fresh solve's
    expect(out.reusedFirst).toBe(0);
    expect(out.reusedSecond).toBe(1);
    expect(out.reusedFresh).toBe(0);
    expect(out.reuseBitwise).toBe(1);
    expect(out.reusedForced).toBe(0); // mesh_changed = 1 rebuilds
    expect(out.forcedBitwise).toBe(1);
    expect(out.reusedMoved).toBe(0); // a block that moved is seen by the geometry comparison
    // float32 density: float32 results, rounded from the double results of the cells made from those densities
    expect(out.status32).toBe(0);
    expect(out.bitwise32).toBe(out.cells);
    // errors name the block (and cell)
    expect(out.nonCubic).toBe(1);
    expect(out.nonCubicMessage).toMatch(/^block 3: cells must be cubes/);
    expect(out.negative).toBe(1);
    expect(out.negativeMessage).toMatch(/^block 2 \(slot 35\), cell \(1, 2, 3\): density is negative \(got -2\.5\)/);
    expect(out.nullDensity).toBe(1);
    expect(out.badSize).toBe(2); // struct_size: AMRGRAV_INVALID_OPTION
    expect(out.device).toBe(4); // the device entry on a CPU solver: AMRGRAV_NO_DEVICE
    expect(out.deviceMessage).toMatch(/needs the CUDA backend/);
    expect(out.empty).toBe(0);
  });
});
