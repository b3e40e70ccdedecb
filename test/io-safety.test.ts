/**
 * Files and the CLI's writing and reading (issue 15, part A): outputs never replace an input (symlinks, hard
 * links, '..') nor a non-regular node (FIFO, directory; /dev/null checked by stat only); write failures and
 * interrupted writes leave nothing behind; a damaged file (one byte 0xff at offset 1024) is a FlashFileError
 * 'CORRUPT_FILE' without an HDF5 dump; oversized inputs are refused before allocating; meaningless block
 * structures are 'BAD_MESH'; and solve's output keeps every dataset and attribute it does not replace byte for
 * byte (checked with h5py).
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, linkSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FlashFileError, MeshError, OutputFileError } from '../mesh/errors.js';
import { copyFlashFileWith } from '../mesh/flashCopy.js';
import { readFlashFile } from '../mesh/flashRead.js';
import { writeFlashFile } from '../mesh/flashWrite.js';
import { h5wasm } from '../mesh/hdf5.js';
import { checkOutputPath, writeAtomically } from '../mesh/outputFile.js';
import { OutOfMemoryError } from '../solver/errors.js';
import { solveFlashFile } from '../solver/solveFile.js';
import { plotSliceFile } from '../validation/plot/slicePlot.js';
import { problemData, writeProblemFile } from '../validation/problemFiles.js';
import { withParticles } from '../validation/particleFiles.js';
import { PYTHON, SEDOV_PLOT_FILE, haveSedov, removeTempDirs, sha256, tempDir } from './flashHelpers.js';

afterAll(removeTempDirs);

const CLI = resolve(__dirname, '../dist/app/cli.js');
const cli = (args: string[], env: Record<string, string> = {}) =>
  spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });

async function errorOf(p: Promise<unknown> | (() => unknown)): Promise<Error & { code?: string }> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    return err as Error & { code?: string };
  }
  throw new Error('expected an error');
}

/** Names in `dir` that are temporary files of a write. */
const tempFiles = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.tmp'));

describe('outputs never replace an input or a non-regular file', () => {
  it('solve, plot and make refuse the input itself, through a symlink, a hard link and a .. path (exit 1, typed)', async () => {
    const dir = tempDir();
    const input = join(dir, 'u.h5');
    await writeProblemFile(input, 'uniform', { levels: 1 });
    mkdirSync(join(dir, 'sub'));
    symlinkSync(input, join(dir, 'link.h5'));
    linkSync(input, join(dir, 'hard.h5'));
    const before = sha256(input);
    for (const out of [input, join(dir, 'link.h5'), join(dir, 'hard.h5'), `${dir}/sub/../u.h5`]) {
      for (const args of [['solve', input, '-o', out], ['plot', input, '--var', 'dens', '-o', out], ['plot', join(dir, 'link.h5'), '--var', 'dens', '-o', out]]) {
        const r = cli(args);
        expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(1);
        expect(r.stderr).toMatch(/OutputFileError \[OUTPUT_IS_INPUT\]/);
        expect(r.stderr.length).toBeLessThan(1000);
      }
      const e = await errorOf(solveFlashFile(input, out));
      expect(e).toBeInstanceOf(OutputFileError);
      expect(e.code).toBe('OUTPUT_IS_INPUT');
      expect((await errorOf(plotSliceFile(input, out, { variable: 'dens' }))).code).toBe('OUTPUT_IS_INPUT');
    }
    expect(sha256(input)).toBe(before);
    expect(statSync(join(dir, 'link.h5')).isFile()).toBe(true);
    expect(tempFiles(dir)).toEqual([]);
  });

  it('a FIFO and a directory are refused by solve, plot and make, and stay what they were', async () => {
    const dir = tempDir();
    const input = join(dir, 'u.h5');
    await writeProblemFile(input, 'uniform', { levels: 1 });
    const fifo = join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const sub = join(dir, 'adir');
    mkdirSync(sub);
    for (const out of [fifo, sub]) {
      for (const args of [['solve', input, '-o', out], ['plot', input, '--var', 'dens', '-o', out], ['make', 'uniform', '--levels', '1', '-o', out]]) {
        const r = cli(args);
        expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(1);
        expect(r.stderr).toMatch(/OutputFileError \[OUTPUT_NOT_REGULAR\].*(FIFO|directory)/);
      }
      const e = await errorOf(writeFlashFile(out, problemData('uniform', { levels: 1 })));
      expect(e.code).toBe('OUTPUT_NOT_REGULAR');
    }
    expect(statSync(fifo).isFIFO()).toBe(true);
    expect(statSync(sub).isDirectory()).toBe(true);
    expect(readdirSync(sub)).toEqual([]);
    expect(tempFiles(dir)).toEqual([]);
  });

  it('/dev/null and other character devices are refused by the path check (stat only; nothing is written)', async () => {
    const e = await errorOf(() => checkOutputPath('/dev/null'));
    expect(e).toBeInstanceOf(OutputFileError);
    expect(e.code).toBe('OUTPUT_NOT_REGULAR');
    expect(e.message).toMatch(/character device/);
    // a symlink to it is followed and refused too
    const link = join(tempDir(), 'null-link');
    symlinkSync('/dev/null', link);
    expect((await errorOf(() => checkOutputPath(link))).message).toMatch(/character device/);
  });

  it('write failures are typed and name the reason; the temporary file is removed', async () => {
    const dir = tempDir();
    const input = join(dir, 'u.h5');
    await writeProblemFile(input, 'uniform', { levels: 1 });
    const missing = cli(['plot', input, '--var', 'dens', '-o', join(dir, 'no', 'such', 'x.png')]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/OutputFileError \[WRITE_FAILED\].*does not exist/);
    expect(missing.stderr).not.toMatch(/\n\s+at /); // no stack trace
    const notDir = cli(['plot', input, '--var', 'dens', '-o', join(input, 'x.png')]);
    expect(notDir.status).toBe(1);
    expect(notDir.stderr).toMatch(/WRITE_FAILED.*not a directory/);
    // a disk-full (or read-only) failure in the middle of a write: typed, named, temp removed, target untouched
    const target = join(dir, 'keep.png');
    writeFileSync(target, 'old');
    for (const [code, words] of [['ENOSPC', /disk full/], ['EACCES', /permission denied/], ['EROFS', /read-only/]] as const) {
      const e = await errorOf(
        writeAtomically(target, [], (temp) => {
          writeFileSync(temp, 'partial');
          throw Object.assign(new Error(`${code}: simulated`), { code });
        }),
      );
      expect(e).toBeInstanceOf(OutputFileError);
      expect(e.code).toBe('WRITE_FAILED');
      expect(e.message).toMatch(words);
    }
    expect(readFileSync(target, 'utf8')).toBe('old');
    expect(tempFiles(dir)).toEqual([]);
  });

  for (const [signal, command] of [
    ['SIGTERM', 'make'],
    ['SIGINT', 'solve'],
    ['SIGTERM', 'plot'],
  ] as const) {
    it(`${signal} during a ${command} write removes the temporary file and ends the process by the signal`, async () => {
      const dir = tempDir();
      const input = join(dir, 'u.h5');
      await writeProblemFile(input, 'uniform', { levels: 1 });
      const out = join(dir, command === 'plot' ? 'out.png' : 'out.h5');
      const args = command === 'make' ? ['make', 'uniform', '--levels', '1', '-o', out] : command === 'solve' ? ['solve', input, '-o', out] : ['plot', input, '--var', 'dens', '-o', out];
      // the test hook holds the write (temporary file complete, not yet renamed) until a signal comes
      const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, AMRGRAV_TEST_HOLD_WRITE: '1' }, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      const temp = await new Promise<string>((res, rej) => {
        child.stderr.on('data', (b: Buffer) => {
          stderr += b.toString();
          const m = /holding (\S+\.tmp)/.exec(stderr);
          if (m) res(m[1]);
        });
        child.on('exit', () => rej(new Error(`exited before holding the write: ${stderr}`)));
      });
      expect(existsSync(temp)).toBe(true);
      const ended = new Promise<[number | null, string | null]>((res) => child.on('exit', (code, sig) => res([code, sig])));
      child.kill(signal);
      const [code, sig] = await ended;
      expect(sig ?? code).toBe(signal);
      expect(existsSync(temp)).toBe(false);
      expect(existsSync(out)).toBe(false);
      expect(tempFiles(dir)).toEqual([]);
    });
  }
});

describe('damaged and oversized files', () => {
  it("one byte 0xff at offset 1024 of a 'make maclaurin' file: FlashFileError CORRUPT_FILE, a short message, input unchanged", async () => {
    const dir = tempDir();
    const good = join(dir, 'm.h5');
    const r0 = cli(['make', 'maclaurin', '--levels', '3', '-o', good]);
    expect(r0.status, r0.stderr).toBe(0);
    const bad = join(dir, 'bad.h5');
    const bytes = readFileSync(good);
    bytes[1024] = 0xff;
    writeFileSync(bad, bytes);
    const before = sha256(bad);
    for (const args of [['solve', bad, '-o', join(dir, 'o.h5')], ['plot', bad, '--var', 'dens', '-o', join(dir, 'o.png')]]) {
      const r = cli(args);
      expect(r.status, r.stderr).toBe(1);
      // one line naming the file (a build with CUDA on a machine without a GPU driver says so first, on a line of its own)
      expect(r.stderr).toMatch(/^amrgrav: FlashFileError \[CORRUPT_FILE\]: .*bad\.h5/m);
      expect(r.stderr).not.toMatch(/HDF5-DIAG|\n\s+at /);
      expect(r.stderr.length).toBeLessThan(600);
    }
    const e = await errorOf(readFlashFile(bad));
    expect(e).toBeInstanceOf(FlashFileError);
    expect(e.code).toBe('CORRUPT_FILE');
    expect(sha256(bad)).toBe(before);
    expect(readdirSync(dir).sort()).toEqual(['bad.h5', 'm.h5']);
  });

  it('a small file claiming a billion blocks is refused before allocating, naming the claim and the file size', async () => {
    const dir = tempDir();
    const d = problemData('uniform', { levels: 1 });
    const p = join(dir, 'huge.h5');
    await writeFlashFile(p, d);
    // every per-block dataset rewritten as a chunked one, then grown to 1e9 rows (no chunk written: the file stays
    // small); the parameter tables (compound) are left out: the block size comes from the variables' shape
    const h5 = await h5wasm();
    const src = new h5.File(p, 'r');
    const out = new h5.File(join(dir, 'crafted.h5'), 'w');
    for (const k of src.keys()) {
      const ds = src.get(k) as import('h5wasm').Dataset;
      const shape = ds.shape!;
      if ((ds.metadata as { type: number }).type === 6) continue; // compound
      if (k !== 'unknown names' && shape.length > 0 && shape[0] === 1) {
        const rest = shape.slice(1);
        const grown = out.create_dataset({ name: k, data: ds.value as never, shape, dtype: ds.dtype as never, maxshape: [null, ...rest], chunks: [1, ...rest] });
        grown.resize([1e9, ...rest]);
      } else out.create_dataset({ name: k, data: ds.value as never, shape: ds.shape!, dtype: ds.dtype as never });
    }
    src.close();
    out.close();
    const crafted = join(dir, 'crafted.h5');
    expect(statSync(crafted).size).toBeLessThan(200_000);
    const e = await errorOf(readFlashFile(crafted));
    expect(e).toBeInstanceOf(FlashFileError);
    expect(e.message).toMatch(/'refine level' claims shape \[1000000000\].*but the whole file is/);
    const r = cli(['solve', crafted, '-o', join(dir, 'o.h5')]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/FlashFileError \[CORRUPT_FILE\]/);
  });

  it('bench --cells 2e9 and make maclaurin --levels 12 are refused up front, naming the size and the limit', () => {
    const dir = tempDir();
    const bench = cli(['bench', '--cells', '2e9']);
    expect(bench.status).toBe(1);
    expect(bench.stderr).toMatch(/OutOfMemoryError \[OUT_OF_MEMORY\].*2\.000e\+9 cells.*GiB.*at most/);
    expect(bench.stderr).not.toMatch(/RangeError/);
    const make = cli(['make', 'maclaurin', '--levels', '12', '-o', join(dir, 'm.h5')]);
    expect(make.status).toBe(1);
    expect(make.stderr).toMatch(/OutOfMemoryError \[OUT_OF_MEMORY\].*12 levels.*cells.*GiB/);
    // a host-memory limit below the estimate: refused by the limit, which the message names
    const small = cli(['make', 'maclaurin', '--levels', '5', '-o', join(dir, 'm.h5')], { AMRGRAV_HOST_MEMORY_LIMIT: '1000000' });
    expect(small.status).toBe(1);
    expect(small.stderr).toMatch(/needs about .*MiB of host memory; the limit is 977 KiB \(AMRGRAV_HOST_MEMORY_LIMIT\)/);
    expect(readdirSync(dir)).toEqual([]);
  });
});

describe('meaningless block structures are BAD_MESH', () => {
  const cases: [string, (d: ReturnType<typeof problemData>) => void, RegExp][] = [
    ['a NaN bounding box', (d) => (d.boundingBox[6 * 3 + 1] = NaN), /block 4: 'bounding box' on axis x is \[.*NaN\] \(not finite\)/],
    ['an infinite bounding box', (d) => (d.boundingBox[6 * 2 + 4] = -Infinity), /block 3: 'bounding box' on axis z .*not finite/],
    ['a zero block size', (d) => (d.blockSize[3 * 5 + 1] = 0), /block 6: 'block size' on axis y is 0 \(must be positive\)/],
    ['a negative block size', (d) => (d.blockSize[3 * 2] = -0.5), /block 3: 'block size' on axis x is -0.5/],
    ['a block size that is not its box', (d) => (d.blockSize[3 * 2] = 0.3), /block 3: 'block size' on axis x is 0.3 but its 'bounding box' spans 0.5/],
    ['a leaf marked as parent', (d) => (d.nodeType[3] = 2), /block 4: 'node type' is 2 but 'gid' gives it 0 children/],
    ['a parent marked as leaf', (d) => (d.nodeType[0] = 1), /block 1: 'node type' is 1 but 'gid' gives it 8 children/],
    ['an unknown node type', (d) => (d.nodeType[0] = 7), /block 1: 'node type' is 7/],
    ['a refine level off by one', (d) => (d.refineLevel[4] = 3), /block 5: 'refine level' is 3 but its parent, block 1, is on level 1/],
    ['refine level 0', (d) => (d.refineLevel[4] = 0), /block 5: 'refine level' is 0/],
    ['a parent that does not list its child', (d) => (d.gid[7] = 3), /block 2: 'gid' names block 1 as its parent, but block 1 does not list it as a child/],
    ['a child that names another parent', (d) => (d.gid[15 * 3 + 6] = 3), /block 1: 'gid' names block 4 as a child, but block 4 names 3 as its parent/],
    ['a child number beyond the file', (d) => (d.gid[7] = 99), /block 1: 'gid' names child 99 but the file has 9 blocks/],
  ];
  for (const [what, mutate, message] of cases) {
    it(what, async () => {
      const dir = tempDir();
      const d = problemData('uniform', { levels: 2 });
      mutate(d);
      const p = join(dir, 'bad.h5');
      await writeFlashFile(p, d);
      const e = await errorOf(readFlashFile(p));
      expect(e, String(e)).toBeInstanceOf(FlashFileError);
      expect(e.code).toBe('BAD_MESH');
      expect(e.message).toMatch(message);
      expect((await errorOf(solveFlashFile(p, join(dir, 'o.h5')))).code).toBe('BAD_MESH');
      expect(readdirSync(dir)).toEqual(['bad.h5']);
    });
  }

  it('the files amrgrav writes and the FLASH 4.4 Sedov file pass the checks', async () => {
    const dir = tempDir();
    for (const kind of ['uniform', 'maclaurin', 'sphere'] as const) {
      const p = join(dir, `${kind}.h5`);
      await writeProblemFile(p, kind, { levels: 3, subsample: 1 });
      await expect(readFlashFile(p)).resolves.toBeTruthy();
    }
    if (haveSedov) await expect(readFlashFile(SEDOV_PLOT_FILE)).resolves.toBeTruthy();
  });
});

const haveH5py = spawnSync(PYTHON, ['-c', 'import h5py'], { encoding: 'utf8' }).status === 0;

/** h5py: every dataset and attribute of A that is not in `replaced`: same raw bytes, dtype, HDF5 type and shape in B. */
const H5PY_COMPARE = `
import h5py, json, sys
a = h5py.File(sys.argv[1], 'r'); b = h5py.File(sys.argv[2], 'r'); replaced = set(json.loads(sys.argv[3]))
diffs = []; checked = 0
def cmp_attrs(name, x, y, skip=()):
    global checked
    for k in x.attrs:
        if k in skip: continue
        checked += 1
        if k not in y.attrs: diffs.append(f'{name}@{k} missing'); continue
        ix, iy = x.attrs.get_id(k), y.attrs.get_id(k)
        if not ix.get_type().equal(iy.get_type()) or ix.shape != iy.shape or x.attrs[k].tobytes() != y.attrs[k].tobytes():
            diffs.append(f'{name}@{k} differs')
def visit(name, x):
    global checked
    if not isinstance(x, h5py.Dataset):
        return
    if name in replaced:
        return
    checked += 1
    y = b.get(name)
    if y is None: diffs.append(f'{name} missing'); return
    if x.dtype != y.dtype or x.shape != y.shape or not x.id.get_type().equal(y.id.get_type()):
        diffs.append(f'{name}: dtype {x.dtype} {y.dtype}, shape {x.shape} {y.shape}'); return
    if x[()].tobytes() != y[()].tobytes(): diffs.append(f'{name}: bytes differ')
    if x.dtype.names and list(x.dtype.names) != list(y.dtype.names): diffs.append(f'{name}: member order')
    cmp_attrs(name, x, y)
a.visititems(visit)
cmp_attrs('/', a, b)
extra = sorted(set(b.keys()) - set(a.keys()))
print(json.dumps({'diffs': diffs, 'checked': checked, 'extra': extra, 'unknown': [s.decode() for s in b['unknown names'][()].ravel()]}))
`;

function compare(a: string, b: string, replaced: string[]) {
  const out = execFileSync(PYTHON, ['-c', H5PY_COMPARE, a, b, JSON.stringify(replaced)], { encoding: 'utf8' });
  return JSON.parse(out.trim().split('\n').pop()!) as { diffs: string[]; checked: number; extra: string[]; unknown: string[] };
}

describe.skipIf(!haveH5py)('solve keeps every dataset and attribute it does not replace, byte for byte (h5py)', () => {
  it('a make file: parameter tables, sim info, gid, metadata and dens identical; gpot added to unknown names', async () => {
    const dir = tempDir();
    const input = join(dir, 'm.h5');
    await writeProblemFile(input, 'maclaurin', { levels: 3, subsample: 1 });
    const out = join(dir, 'out.h5');
    await solveFlashFile(input, out, { solver: { accelerations: true } });
    const r = compare(input, out, ['unknown names']);
    expect(r.diffs).toEqual([]);
    expect(r.checked).toBeGreaterThan(15);
    expect(r.extra).toEqual(['gacx', 'gacy', 'gacz', 'gpot']);
    expect(r.unknown).toEqual(['dens', 'gpot', 'gacx', 'gacy', 'gacz']);
    // solving the output again replaces gpot in place: everything else, unknown names included, is identical
    const again = join(dir, 'again.h5');
    await solveFlashFile(out, again);
    const r2 = compare(out, again, ['gpot']);
    expect(r2.diffs).toEqual([]);
    expect(r2.extra).toEqual([]);
  });

  it("a file with massive particles: only the written variables and the table's gpot/acc columns change", async () => {
    const dir = tempDir();
    const input = join(dir, 'p.h5');
    const spec = Array.from({ length: 40 }, (_, i) => ({ x: 0.3 + 0.01 * i, y: 0.5, z: 0.45 + 0.002 * i, mass: 1e-3 * (1 + (i % 3)) }));
    await writeFlashFile(input, withParticles(problemData('sphere', { levels: 2, subsample: 1 }), spec));
    const out = join(dir, 'out.h5');
    const report = await solveFlashFile(input, out, { particleSoftening: 0.03, solver: { backend: 'cpu', accelerations: true } });
    expect(report.particles!.written).toEqual(['accx', 'accy', 'accz', 'gpot']);
    const r = compare(input, out, ['unknown names', 'tracer particles']);
    expect(r.diffs).toEqual([]);
    expect(r.extra).toEqual(['gacx', 'gacy', 'gacz', 'gpot']);
    const COLUMNS = `import h5py, sys, json
a = h5py.File(sys.argv[1], 'r'); b = h5py.File(sys.argv[2], 'r')
names = [s[0].decode().strip() for s in a['particle names'][()]]
ta, tb = a['tracer particles'], b['tracer particles']
same = ta.dtype == tb.dtype and ta.shape == tb.shape and ta.id.get_type().equal(tb.id.get_type())
print(json.dumps({'same_type': bool(same), 'changed': [n for i, n in enumerate(names) if ta[:, i].tobytes() != tb[:, i].tobytes()]}))`;
    const cols = JSON.parse(execFileSync(PYTHON, ['-c', COLUMNS, input, out], { encoding: 'utf8' }).trim().split('\n').pop()!);
    expect(cols).toEqual({ same_type: true, changed: ['accx', 'accy', 'accz', 'gpot'] });
  });

  it.skipIf(!haveSedov)('the FLASH 4.4 Sedov file (float32, min/max attributes, compound tables with string values first)', async () => {
    const dir = tempDir();
    const out = join(dir, 'sedov_copy.h5');
    const n = 69 * 64;
    const before = sha256(SEDOV_PLOT_FILE);
    await copyFlashFileWith(SEDOV_PLOT_FILE, out, new Map([['pres', new Float64Array(n).fill(2)], ['gpot', Float64Array.from({ length: n }, (_, i) => -i)]]));
    expect(sha256(SEDOV_PLOT_FILE)).toBe(before);
    const r = compare(SEDOV_PLOT_FILE, out, ['pres', 'unknown names']);
    expect(r.diffs).toEqual([]);
    expect(r.checked).toBeGreaterThan(20);
    expect(r.extra).toEqual(['gpot']);
    expect(r.unknown).toEqual(['dens', 'pres', 'temp', 'gpot']);
    const d = await readFlashFile(out);
    expect(d.variablePrecision).toBe('float32');
    expect(d.variables.get('pres')!.every((v) => v === 2)).toBe(true);
    expect(d.variables.get('gpot')![100]).toBe(-100);
    const MINMAX = `import h5py, sys, json
f = h5py.File(sys.argv[1], 'r')
print(json.dumps({v + '.' + a: [str(f[v].attrs[a].dtype), float(f[v].attrs[a][0])] for v in ['pres', 'gpot'] for a in ['minimum', 'maximum']}))`;
    const attrs = JSON.parse(execFileSync(PYTHON, ['-c', MINMAX, out], { encoding: 'utf8' }));
    expect(attrs).toEqual({ 'pres.minimum': ['float32', 2], 'pres.maximum': ['float32', 2], 'gpot.minimum': ['float32', -(n - 1)], 'gpot.maximum': ['float32', -0] });
  });
});

if (!haveH5py) {
  describe('output fidelity', () => {
    it.skip(`skipped: ${PYTHON} has no h5py (install python3-h5py) to compare raw bytes and dtypes`, () => {});
  });
}

describe('MeshError is still the base of the file errors', () => {
  it('OutputFileError and FlashFileError are MeshErrors with codes', () => {
    expect(new OutputFileError('OUTPUT_IS_INPUT', 'x')).toBeInstanceOf(MeshError);
    expect(new OutOfMemoryError('x').code).toBe('OUT_OF_MEMORY');
  });
});

const haveScript = spawnSync('script', ['--version'], { encoding: 'utf8' }).status === 0;

describe.skipIf(!haveScript)('progress on a terminal only', () => {
  // `script` runs the command on a pseudo-terminal, as a user's shell would
  const onTty = (args: string[]) =>
    spawnSync('script', ['-qec', [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' '), '/dev/null'], { encoding: 'utf8' }).stdout;
  it('bench and the sweep draw progress on a terminal; with --json or in a pipe nothing', () => {
    expect(onTty(['bench', '--grid', '12', '--repeat', '2'])).toMatch(/\[#*\.*\] +\d+% timed solve 1 of 2/);
    expect(onTty(['validate', 'maclaurin', '--sweep', '--levels', '2', '--subsample', '1'])).toMatch(/direct summation of 4096 cells[\s\S]*tree solve theta=1 \(1 of 5\)/);
    expect(onTty(['bench', '--grid', '12', '--repeat', '2', '--json'])).not.toMatch(/timed solve|\x1b\[2K/);
    const piped = cli(['bench', '--grid', '12', '--repeat', '2']);
    expect(piped.status).toBe(0);
    expect(piped.stdout + piped.stderr).not.toMatch(/timed solve|\x1b\[2K/);
  });
});
