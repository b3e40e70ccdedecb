/**
 * The README's examples run as written: every ```ts block (plain JavaScript apart from the fence) runs with the
 * package import pointed at dist/, the MPI example also under mpirun on 2 ranks, and the C API build line
 * compiles and runs test/c/capi_demo.c (its -Wl,-rpath makes the program find libamrgrav.so).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mpirun, scaledTimeout } from './helpers.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');
const blocks = [...readme.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], code: m[2] }));
const tmp = mkdtempSync(join(tmpdir(), 'amrgrav-readme-'));
const entry = pathToFileURL(join(root, 'dist', 'solver', 'index.js')).href;

function script(code: string, name: string): string {
  const file = join(tmp, name);
  writeFileSync(file, code.replaceAll("from 'amrgrav'", `from '${entry}'`));
  return file;
}

describe('README examples', () => {
  const ts = blocks.filter((b) => b.lang === 'ts');
  it('has the API, features, MPI and periodic examples', () => {
    expect(ts.length).toBeGreaterThanOrEqual(4);
  });

  it.each(ts.map((b, i) => [i, b.code] as const))('ts block %i runs in one process', (i, code) => {
    const r = spawnSync(process.execPath, [script(code, `block${i}.mjs`)], { encoding: 'utf8', timeout: scaledTimeout(120_000) });
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
