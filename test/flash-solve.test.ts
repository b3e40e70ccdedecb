/**
 * Solving FLASH files: the solve of a MacLaurin file written by `make` is the in-memory solve of the same mesh
 * (bitwise), close to the analytic potential and energy; the input is never modified and no temporary file is
 * left; restriction fills parents exactly for linear fields; the CLI's solve, make and plot commands, and the
 * PNG plots decode to the reported sizes and ranges.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, describe, expect, it } from 'vitest';
import { extractCells, fillVariable, refineMesh, uniformMesh } from '../mesh/index.js';
import { flashToMesh } from '../mesh/flashMesh.js';
import { readFlashFile } from '../mesh/flashRead.js';
import { restrictToParents } from '../mesh/restrict.js';
import { GravitySolver } from '../solver/gravitySolver.js';
import { solveFlashFile } from '../solver/solveFile.js';
import { maclaurinMass } from '../validation/analytic/index.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { relativeErrorStats } from '../validation/errorMetrics.js';
import { plotSliceFile } from '../validation/plot/slicePlot.js';
import { plotSweep } from '../validation/plot/sweepPlot.js';
import { sweepMaclaurin } from '../validation/maclaurinRun.js';
import { writeProblemFile } from '../validation/problemFiles.js';
import { sha256, removeTempDirs, tempDir } from './flashHelpers.js';

afterAll(removeTempDirs);

const LEVELS = 4;
const CLI = resolve(__dirname, '../dist/app/cli.js');

describe('amrgrav solve on a MacLaurin file', () => {
  it('equals the in-memory solve of the same mesh, matches the analytic potential and energy, leaves the input alone', async () => {
    const dir = tempDir();
    const input = join(dir, 'maclaurin.h5');
    const output = join(dir, 'maclaurin_gpot.h5');
    await writeProblemFile(input, 'maclaurin', { levels: LEVELS });
    const before = sha256(input);
    const report = await solveFlashFile(input, output);
    expect(sha256(input)).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['maclaurin.h5', 'maclaurin_gpot.h5']);

    const problem = maclaurinProblem({ levels: LEVELS });
    const memory = await new GravitySolver().solve(problem.mesh);
    const { mesh } = flashToMesh(await readFlashFile(output));
    const cells = extractCells(mesh, 'dens');
    const gpot = mesh.variable('gpot');
    const fromFile = Float64Array.from({ length: cells.count }, (_, i) => gpot[cells.block[i] * mesh.cellsPerBlock + cells.cell[i]]);
    expect(cells.count).toBe(problem.cells.count);
    expect(cells.mass).toEqual(problem.cells.mass);
    expect(fromFile).toEqual(memory.potential);

    const err = relativeErrorStats(fromFile, problem.analytic);
    expect(err.maxRelError).toBeLessThan(5e-3);
    expect(err.meanRelError).toBeLessThan(1e-3);
    // W of a homogeneous oblate spheroid: -(3/5) G M^2 arcsin(e) / (a1 e)
    const { a1, e, rho, G } = problem.params;
    const M = maclaurinMass({ a1, e, rho });
    const W = (-0.6 * G * M * M * Math.asin(e)) / (a1 * e);
    expect(Math.abs(report.energy - W) / Math.abs(W)).toBeLessThan(5e-3);
    expect(report.cells).toBe(cells.count);
    expect(report.levels).toEqual([3, LEVELS]);
    expect(report.written).toEqual(['gpot']);

    // solving the solved file replaces gpot (same density: same values) without a second 'gpot' name
    const again = join(dir, 'again.h5');
    await solveFlashFile(output, again);
    const [first, second] = [await readFlashFile(output), await readFlashFile(again)];
    expect(second.unknownNames).toEqual(['dens', 'gpot']);
    expect(second.variables.get('gpot')).toEqual(first.variables.get('gpot'));
  });

  it('refuses to overwrite its input', async () => {
    const dir = tempDir();
    const input = join(dir, 'u.h5');
    await writeProblemFile(input, 'uniform', { levels: 1 });
    const before = sha256(input);
    await expect(solveFlashFile(input, join(dir, '.', 'u.h5'))).rejects.toThrow(/is the input .*the same file/);
    expect(sha256(input)).toBe(before);
  });
});

describe('restriction to parent blocks', () => {
  it('is exact for a linear field: each parent cell holds the field at its centre', () => {
    const mesh = refineMesh(uniformMesh({ lrefineMax: 4, level: 2 }), (m, b) => m.block(b).lo[0] < 0.3);
    const f = (x: number, y: number, z: number) => 1 + x + 2 * y - 3 * z;
    fillVariable(mesh, 'f', f);
    restrictToParents(mesh, 'f');
    const v = mesh.variable('f');
    const { nxb, nyb, nzb } = mesh.options;
    let checked = 0;
    for (let b = 0; b < mesh.blockCount; b++) {
      if (mesh.isLeaf(b)) continue;
      for (let k = 0, c = 0; k < nzb; k++)
        for (let j = 0; j < nyb; j++)
          for (let i = 0; i < nxb; i++, c++) {
            const [x, y, z] = mesh.cellCentre(b, i, j, k);
            expect(Math.abs(v[b * mesh.cellsPerBlock + c] - f(x, y, z))).toBeLessThan(1e-12);
            checked++;
          }
    }
    expect(checked).toBeGreaterThan(0);
  });
});

function cli(...args: string[]) {
  return spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 120_000 });
}

describe('the CLI', () => {
  it('make, solve --json --accel, plot, solve --boundary periodic; --help for each; a clear refusal of a bad --boundary', () => {
    const dir = tempDir();
    const f = join(dir, 's.h5');
    const made = JSON.parse(execFileSync(process.execPath, [CLI, 'make', 'sphere', '-o', f, '--levels', '3', '--json'], { encoding: 'utf8' }));
    expect(made.problem).toBe('sphere');
    const out = join(dir, 's_gpot.h5');
    const r = cli('solve', f, '-o', out, '--accel', '--json', '--theta', '0.4');
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report.written).toEqual(['gpot', 'gacx', 'gacy', 'gacz']);
    expect(report.cells).toBe(made.cells);
    expect(report.energy).toBeLessThan(0);
    expect(r.stderr).not.toMatch(/\[#/); // no progress bar when not on a terminal
    const bad = cli('solve', f, '-o', join(dir, 'p.h5'), '--boundary', 'xx');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--boundary: expected isolated, periodic or periodic axes such as xy or z, got 'xx'/);
    // a fully periodic solve of the same file (its domain is the box) runs, and its answer is not the isolated one
    const per = cli('solve', f, '-o', join(dir, 'p.h5'), '--boundary', 'periodic', '--json', '--backend', 'cpu');
    expect(per.status, per.stderr).toBe(0);
    const perReport = JSON.parse(per.stdout);
    expect(perReport.cells).toBe(made.cells);
    expect(perReport.energy).not.toBeCloseTo(report.energy, 15);
    const missing = cli('solve', f);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/-o FILE/);
    const notFound = cli('solve', join(dir, 'none.h5'), '-o', join(dir, 'x.h5'));
    expect(notFound.status).toBe(1);
    expect(notFound.stderr).toMatch(/FlashFileError \[FILE_NOT_FOUND\]/);
    const png = join(dir, 'gpot.png');
    const p = cli('plot', out, '--var', 'gpot', '--slice', 'y=0.5', '-o', png, '--json');
    expect(p.status, p.stderr).toBe(0);
    expect(JSON.parse(p.stdout).axis).toBe('y');
    for (const command of ['solve', 'make', 'plot', 'validate', 'bench']) {
      const h = cli(command, '--help');
      expect(h.status, command).toBe(0);
      expect(h.stdout, command).toMatch(/\[[^\]]+\]/); // defaults in brackets
    }
  });
});

describe('PNG plots', () => {
  it('relerr slice of a solved MacLaurin file: the PNG decodes to the reported size; its range is the cut cells\' errors', async () => {
    const dir = tempDir();
    const input = join(dir, 'm.h5');
    const solved = join(dir, 'm_gpot.h5');
    await writeProblemFile(input, 'maclaurin', { levels: 3, subsample: 2 });
    await solveFlashFile(input, solved);
    const png = join(dir, 'relerr.png');
    const r = await plotSliceFile(solved, png, { variable: 'relerr', slice: { axis: 'z', at: 0.51 }, log: true });
    const img = PNG.sync.read(readFileSync(png));
    expect([img.width, img.height]).toEqual([r.width, r.height]);
    // the errors of the cells cut by z = 0.51 bound the colour range
    const problem = maclaurinProblem({ levels: 3, subsample: 2 });
    const memory = await new GravitySolver().solve(problem.mesh);
    let lo = Infinity;
    let hi = 0;
    const h = problem.cells.size;
    for (let i = 0; i < problem.cells.count; i++) {
      if (Math.abs(problem.cells.z[i] - 0.51) > h[i] / 2) continue;
      const e = Math.abs(memory.potential[i] - problem.analytic[i]) / Math.abs(problem.analytic[i]);
      lo = Math.min(lo, e);
      hi = Math.max(hi, e);
    }
    expect(r.min).toBeCloseTo(lo, 12);
    expect(r.max).toBeCloseTo(hi, 12);
    expect(r.blocksCut).toBeGreaterThan(0);
  });

  it('the theta sweep plot decodes', async () => {
    const dir = tempDir();
    const reports = await sweepMaclaurin({ levels: 2, subsample: 2 }, [1, 0.5, 0.25]);
    const png = join(dir, 'sweep.png');
    await plotSweep(reports, png);
    const img = PNG.sync.read(readFileSync(png));
    expect(img.width).toBeGreaterThan(600);
    expect(img.height).toBeGreaterThan(400);
  });
});
