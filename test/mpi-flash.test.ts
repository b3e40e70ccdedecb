/**
 * `amrgrav solve` under mpirun: each rank reads the block structure and only its own chunk of the density, the
 * ranks solve together with locally essential trees, and rank 0 writes a file whose potential matches the
 * single-process solve of the same file within 1e-4 (theta 0.5); the input is untouched.
 */
import { execFile } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { readFlashFile } from '../mesh/flashRead.js';
import { FLASH_LEAF, cellsPerBlock } from '../mesh/flashFormat.js';
import { removeTempDirs, sha256, tempDir } from './flashHelpers.js';
import { scaledTimeout } from './helpers.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'dist', 'app', 'cli.js');

afterAll(removeTempDirs);

describe('solve a FLASH file on several ranks', () => {
  it('3 ranks write the potential of 1 process within 1e-4, and the same energy', async () => {
    const dir = tempDir();
    const input = join(dir, 'mac.h5');
    await run('node', [cli, 'make', 'maclaurin', '--levels', '4', '-o', input, '--json']);
    const before = sha256(input);
    const one = JSON.parse((await run('node', [cli, 'solve', input, '-o', join(dir, 'one.h5'), '--json'])).stdout);
    const three = await run(
      'mpirun',
      ['--allow-run-as-root', '--oversubscribe', '-np', '3', 'node', cli, 'solve', input, '-o', join(dir, 'three.h5'), '--accel', '--json'],
      { timeout: scaledTimeout(240_000), killSignal: 'SIGKILL' },
    );
    const report = JSON.parse(three.stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop()!);
    expect(report.ranks).toBe(3);
    expect(report.cells).toBe(one.cells);
    expect(report.written).toEqual(['gpot', 'gacx', 'gacy', 'gacz']);
    expect(Math.abs(report.energy - one.energy) / Math.abs(one.energy)).toBeLessThan(1e-6);
    expect(sha256(input)).toBe(before);

    const [a, b] = [await readFlashFile(join(dir, 'one.h5')), await readFlashFile(join(dir, 'three.h5'))];
    const cpb = cellsPerBlock(a);
    const pa = a.variables.get('gpot')!, pb = b.variables.get('gpot')!;
    let worst = 0, leaves = 0;
    for (let blk = 0; blk < a.blockCount; blk++) {
      if (a.nodeType[blk] !== FLASH_LEAF) continue;
      leaves++;
      for (let c = blk * cpb; c < (blk + 1) * cpb; c++) worst = Math.max(worst, Math.abs(pa[c] - pb[c]) / Math.abs(pa[c]));
    }
    expect(leaves).toBe(one.leafBlocks);
    expect(worst).toBeGreaterThan(0); // a distributed walk, not a copy of the single-process answer
    expect(worst).toBeLessThan(1e-4);
    expect(Array.from(b.variables.get('dens')!)).toEqual(Array.from(a.variables.get('dens')!));
    expect(b.variables.get('gacz')!.some((v) => v !== 0)).toBe(true);
  });

  it('a periodic solve on 2 ranks writes the single-process potential within 1e-4 of its largest value', async () => {
    const dir = tempDir();
    const input = join(dir, 's.h5');
    await run('node', [cli, 'make', 'sphere', '--levels', '3', '-o', input, '--json']);
    await run('node', [cli, 'solve', input, '-o', join(dir, 'p1.h5'), '--boundary', 'periodic', '--json']);
    await run(
      'mpirun',
      ['--allow-run-as-root', '--oversubscribe', '-np', '2', 'node', cli, 'solve', input, '-o', join(dir, 'p2.h5'), '--boundary', 'periodic', '--json'],
      { timeout: scaledTimeout(240_000), killSignal: 'SIGKILL' },
    );
    const [a, b] = [await readFlashFile(join(dir, 'p1.h5')), await readFlashFile(join(dir, 'p2.h5'))];
    const pa = a.variables.get('gpot')!, pb = b.variables.get('gpot')!;
    const scale = pa.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    let worst = 0;
    for (let i = 0; i < pa.length; i++) worst = Math.max(worst, Math.abs(pa[i] - pb[i]));
    expect(scale).toBeGreaterThan(0);
    expect(worst / scale).toBeLessThan(1e-4);
  });
});
