/**
 * The README's examples run as written: every ```ts block (plain JavaScript apart from the fence) runs unchanged,
 * its imports of 'amrgrav' and 'amrgrav/validation' resolved by Node through package.json "exports" (the scripts
 * lie in a temporary folder inside the package, where the package's own name resolves to it, in dist/), with a
 * temporary working folder for the files they write; the MPI example also runs under mpirun on 2 ranks, and the
 * C API build line compiles and runs test/c/capi_demo.c (its -Wl,-rpath makes the program find libamrgrav.so).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { mpirun, scaledTimeout } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2] }));
const tmp = mkdtempSync(join(tmpdir(), 'amrgrav-readme-')); // the examples' working folder (files they write)
const scripts = mkdtempSync(join(root, '.readme-')); // inside the package: 'amrgrav' is a self-reference there
afterAll(() => {
  rmSync(scripts, { recursive: true, force: true });
  rmSync(tmp, { recursive: true, force: true });
});

function script(code: string, name: string): string {
  const file = join(scripts, name);
  writeFileSync(file, code);
  return file;
}

describe('README examples', () => {
  it('import only package entries that package.json exports', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; exports: Record<string, unknown> };
    const used = new Set(blocks.filter((b) => b.lang === 'ts').flatMap((b) => [...b.code.matchAll(/from '(amrgrav[^']*)'/g)].map((m) => m[1])));
    expect([...used].sort()).toEqual(['amrgrav', 'amrgrav/validation']);
    for (const spec of used) expect(Object.keys(pkg.exports)).toContain(`.${spec.slice(pkg.name.length)}`);
  });

  const ts = blocks.filter((b) => b.lang === 'ts');
  it('has the API, features, MPI and periodic examples', () => {
    expect(ts.length).toBeGreaterThanOrEqual(4);
  });

  it.each(ts.map((b, i) => [i, b.code] as const))('ts block %i runs in one process', (i, code) => {
    const r = spawnSync(process.execPath, [script(code, `block${i}.mjs`)], { cwd: tmp, encoding: 'utf8', timeout: scaledTimeout(120_000) });
    expect(r.status, r.stderr).toBe(0);
  });

  it('the MPI example runs on 2 ranks', async () => {
    const code = ts.find((b) => b.code.includes('mpiWorld()'))!.code;
    const run = await mpirun(2, script(code, 'ranks.mjs'));
    expect(run.timedOut, run.stderr).toBe(false);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('200 potentials from 2 ranks');
  });

  it('the C API build line builds a program that runs', () => {
    const line = blocks.find((b) => b.lang === 'sh' && b.code.includes('-lamrgrav'))!.code.trim();
    expect(line).toContain('-Wl,-rpath');
    const exe = join(tmp, 'capi_demo');
    const cmd = line.replace('my_hydro.c', join(root, 'test', 'c', 'capi_demo.c')).replace('-o my_hydro', `-o ${exe}`);
    execFileSync('sh', ['-c', cmd], { cwd: root });
    const out = JSON.parse(execFileSync(exe, { encoding: 'utf8', cwd: tmp }).trim());
    expect(out.ok).toBe(true);
  });
});
