/**
 * docs/coupling.md's C++ worked example (issue #19): test/cpp/block_gravity.cpp, a block-based C++ hydro code's loop
 * over ghost-celled mesh blocks on three levels through the C API, against direct summation. It links the
 * libamrgrav the package builds, as test/c-api.test.ts does.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const libDir = join(root, 'build', 'Release');
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version;

describe('C++ block loop (g++)', () => {
  it('mesh blocks with ghost cells on three levels: gathered, solved (potential and accelerations), scattered, against direct summation', () => {
    expect(existsSync(join(libDir, 'libamrgrav.so')), `libamrgrav.so in ${libDir} (built by npm install)`).toBe(true);
    const exe = join(mkdtempSync(join(tmpdir(), 'amrgrav-cpp-')), 'block_gravity');
    execFileSync('g++', [
      '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror',
      `-I${join(root, 'native', 'include')}`,
      join(root, 'test', 'cpp', 'block_gravity.cpp'),
      `-L${libDir}`, '-lamrgrav', `-Wl,-rpath,${libDir}`,
      '-o', exe,
    ]);
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8' }).trim());
    expect(out.cells).toBe(22 * 512); // 7 + 7 + 8 leaves of 8^3 cells on levels 0, 1, 2
    expect(out.leafBlocks).toBe(22);
    // the tree at theta 0.5, order 2, against direct summation with the lattice self term: measured 1.6e-4, 2.2e-4
    expect(out.maxRelPotentialError).toBeLessThan(out.potentialTolerance);
    expect(out.potentialTolerance).toBeLessThanOrEqual(1e-3);
    expect(out.maxAccelerationErrorOverMax).toBeLessThan(out.accelerationTolerance);
    expect(out.ghostsIntact).toBe(true);
    expect(out.version).toBe(version);
    expect(out.ok).toBe(true);
  });
});
