/**
 * What a new user meets first (issue 15, "first contact"): features() from the package entry, the LICENSE, the
 * install script's line and AMRGRAV_CUDA=OFF, the plain CPU-fallback message, and validate's PASS/FAIL verdicts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { features } from '../solver/index.js';
import { fallbackReason } from '../solver/gravitySolver.js';
import { nativeFeatures } from '../solver/native.js';
import { maclaurinVerdict, periodicVerdict } from '../validation/verdict.js';
import type { MaclaurinReport } from '../validation/maclaurinRun.js';
import type { PeriodicReport } from '../validation/periodicRun.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(root, 'dist', 'app', 'cli.js');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

describe('package', () => {
  it('features() says what was built: version, cuda, gpu, mpi', () => {
    const f = features();
    expect(f.version).toBe(pkg.version);
    expect(f.cuda).toBe(nativeFeatures().cudaBuilt);
    expect(f.gpu).toBe(nativeFeatures().cuda);
    expect(f.mpi).toBe(nativeFeatures().mpi);
    expect(typeof f.gpuReason).toBe('string');
  });

  it("has two entries: the solver ('amrgrav') and the validations ('amrgrav/validation'), and the amrgrav command", async () => {
    expect(Object.keys(pkg.exports)).toEqual(['.', './validation']);
    const targets = [pkg.bin.amrgrav, ...Object.values(pkg.exports as Record<string, Record<string, string>>).flatMap((e) => Object.values(e))];
    for (const file of targets) expect(existsSync(join(root, file)), file).toBe(true);
    const main: Record<string, unknown> = await import('../solver/index.js');
    const validation: Record<string, unknown> = await import('../validation/index.js');
    for (const name of ['runMaclaurin', 'sweepMaclaurin', 'maclaurinProblem', 'writeProblemFile', 'problemData']) {
      expect(name in main, name).toBe(false);
      expect(typeof validation[name], name).toBe('function');
    }
    for (const name of ['GravitySolver', 'solveFlashFile', 'ewaldTable', 'mpiWorld', 'gatherToRoot', 'chunkOf', 'solveWholeProblem', 'MeshError'])
      expect(typeof main[name], name).toBe('function');
  });

  it('ships an MIT LICENSE matching package.json', () => {
    expect(pkg.license).toBe('MIT');
    const text = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^MIT License/);
    expect(text).toContain('the amrgrav developers');
  });
});

describe('install script', () => {
  const dry = (env: Record<string, string>) =>
    spawnSync(process.execPath, [join(root, 'scripts', 'install.mjs')], { encoding: 'utf8', env: { ...process.env, ...env, AMRGRAV_INSTALL_DRY_RUN: '1' } });

  it('prints one line saying what is built, and AMRGRAV_CUDA=OFF leaves the CUDA backend out', () => {
    const off = dry({ AMRGRAV_CUDA: 'OFF' });
    expect(off.status).toBe(0);
    expect(off.stderr).toMatch(/^amrgrav: building the native addon with cmake-js: .*CUDA backend off/);
    expect(JSON.parse(off.stdout).command.slice(1)).toEqual(['compile', '--out', 'build', '--CDAMRGRAV_GPU_BACKEND=NONE']);
    const plain = dry({ AMRGRAV_CUDA: '' });
    expect(JSON.parse(plain.stdout).command.slice(1)).toEqual(['compile', '--out', 'build']); // npm ci as before
    expect(dry({ AMRGRAV_CUDA: 'maybe' }).status).toBe(1);
  });
});

describe('backend auto without a GPU', () => {
  it('says plainly why the CPU runs', () => {
    expect(fallbackReason('CUDA backend: no usable CUDA driver or device (cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version)')).toBe('no GPU driver found');
    expect(fallbackReason('CUDA backend: no CUDA device found')).toBe('no GPU found');
  });

  it.skipIf(!nativeFeatures().cudaBuilt || nativeFeatures().cuda)("prints one line, once, and only for 'auto'", () => {
    const run = (backend: string) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', `
        import { GravitySolver } from ${JSON.stringify(join(root, 'dist', 'solver', 'index.js'))};
        const c = { x: new Float64Array([0.2, 0.7]), y: new Float64Array(2).fill(0.5), z: new Float64Array(2).fill(0.5), mass: new Float64Array(2).fill(1), size: new Float64Array(2).fill(0.1) };
        for (let k = 0; k < 3; k++) await new GravitySolver({ backend: '${backend}' }).solveCells(c);`], { encoding: 'utf8' });
    const auto = run('auto');
    expect(auto.status, auto.stderr).toBe(0);
    expect(auto.stderr).toBe('amrgrav: no GPU driver found: using the CPU backend\n');
    expect(run('cpu').stderr).toBe('');
  });
});

describe('validate verdicts', () => {
  const mac = (over: Partial<MaclaurinReport>) =>
    ({ maxRelError: 2.86e-4, order: 2, selfPotential: 'lattice', method: 'tree', theta: 0.5, ...over }) as MaclaurinReport;
  const setup = { levels: 5, e: 0.9, a1: 0.25, subsample: 4 };

  it('MacLaurin: the measured configuration is held to 1.5x its measured error; others to FLASH\'s 1.5%', () => {
    expect(maclaurinVerdict(mac({}), setup)).toMatchObject({ pass: true, tolerance: 1.5 * 2.86e-4 });
    expect(maclaurinVerdict(mac({ maxRelError: 3.18e-3, order: 1 }), setup)).toMatchObject({ pass: true, tolerance: 1.5e-2 });
    // a regression of the default run to order-1 accuracy fails
    expect(maclaurinVerdict(mac({ maxRelError: 3.18e-3 }), setup).pass).toBe(false);
    expect(maclaurinVerdict(mac({ maxRelError: 2e-2 }), { ...setup, levels: 3 }).pass).toBe(false);
  });

  it('periodic: FLASH\'s problems must be 10x below its tolerance; the others get no verdict', () => {
    const p = (maxError: number, flashTolerance?: number) => ({ maxError, flashTolerance, compared: 'maxError' }) as PeriodicReport;
    expect(periodicVerdict(p(1.9e-4, 2e-3))).toMatchObject({ pass: true, tolerance: 2e-4 });
    expect(periodicVerdict(p(2.1e-4, 2e-3))?.pass).toBe(false);
    expect(periodicVerdict(p(1e-3))).toBeUndefined();
    // the wave along the diagonal is not one of FLASH's three: held to the tolerance itself
    const diagonal = { ...p(1.9e-3, 2e-3), problem: 'sine-diagonal-32-centre' } as PeriodicReport;
    expect(periodicVerdict(diagonal)).toMatchObject({ pass: true, tolerance: 2e-3 });
  });

  it('validate maclaurin prints its verdict and --check exits non-zero on FAIL', () => {
    const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, 'validate', 'maclaurin', '--levels', '3', '--threads', '1', ...args], { encoding: 'utf8' });
    const pass = cli('--check');
    expect(pass.status, pass.stderr).toBe(0);
    expect(pass.stdout).toMatch(/PASS: max relative error \S+ <= tolerance 0\.0150 \(FLASH's MacLaurin pass mark/);
    // theta 1 with monopoles at levels 3: about 2.6e-2, above FLASH's mark
    const fail = cli('--theta', '1', '--order', '1', '--e', '0.99', '--json');
    const failCheck = cli('--theta', '1', '--order', '1', '--e', '0.99', '--json', '--check');
    const v = JSON.parse(fail.stdout).verdict;
    expect(v.pass).toBe(false);
    expect(fail.status).toBe(0); // a verdict, not an error, without --check
    expect(failCheck.status).toBe(1);
  });

  it('validate periodic prints a verdict per FLASH problem and --check follows it', () => {
    const cli = (...args: string[]) => spawnSync(process.execPath, [CLI, 'validate', 'periodic', '--problem', 'sine', '--n', '8', '--threads', '1', ...args], { encoding: 'utf8' });
    const r = cli('--json', '--check');
    const [report] = JSON.parse(r.stdout);
    expect(report.verdict.tolerance).toBeCloseTo(2e-4, 12);
    expect(report.verdict.pass).toBe(report.maxError <= 2e-4);
    expect(r.status).toBe(report.verdict.pass ? 0 : 1);
    expect(cli().stdout).toMatch(/verdict: PASS when maxError is at least 10x below FLASH's tolerance/);
  });
});
