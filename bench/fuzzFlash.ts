/**
 * \file fuzzFlash.ts
 * \brief A bounded, seeded fuzz run of amrgrav's file handling: mutated FLASH files (byte flips, truncations,
 * shape and value lies) solved (and some plotted), plus bad command lines. Each outcome is counted: a typed
 * error, accepted (checked: the output reads back with finite gpot and the input's density), a crash (an
 * untyped exception or a dead process), a hang (no answer within the watchdog's time), silently wrong (a file
 * known to be meaningless accepted, or an accepted output that does not check), input modified, files left behind.
 *
 *   node dist/bench/fuzzFlash.js [--seed 15] [--files 300] [--no-cli] [--verbose] [--timeout S]
 *   prints the table of bench/RESULTS.md
 *
 * The files are run by a worker process (this file with --worker) that the parent watches: a worker that dies
 * marks its case a crash, one silent for `caseTimeoutS` is killed and its case marked a hang; a new worker goes on.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Outcome = 'typed' | 'accepted' | 'crash' | 'hang' | 'silentlyWrong';

export interface CaseResult {
  index: number;
  kind: string;
  what: string;
  outcome: Outcome;
  inputModified: boolean;
  leftBehind: string[];
  detail?: string;
}

export interface FuzzOptions {
  seed?: number;
  /** Mutated files. Default 300. */
  files?: number;
  /** Also the bad command lines. Default true. */
  cli?: boolean;
  /** A case silent this long is a hang. Default 180 s (a case takes well under a second). */
  caseTimeoutS?: number;
  /** The FLASH 4.4 Sedov file, if present, is one of the bases. */
  sedov?: string;
}

export interface FuzzReport {
  seed: number;
  cases: CaseResult[];
}

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** The compiled tree (dist/): workers and the CLI run from it, also when this module is loaded from source. */
const DIST = /[\\/]dist[\\/]bench[\\/]?$/.test(HERE) ? resolve(HERE, '..') : resolve(HERE, '../dist');
const CLI = join(DIST, 'app/cli.js');
const WORKER = join(DIST, 'bench/fuzzFlash.js');
const DEFAULT_SEDOV = resolve(DIST, '../../shared/data/flash/sedov_hdf5_plt_cnt_0000');

import { rng } from '../validation/random.js';
export { rng };

const sha = (p: string) => createHash('sha256').update(readFileSync(p)).digest('hex');

// ---------------------------------------------------------------------------------------------------------------
// worker: builds the bases, runs cases [from, to), prints START i / RESULT {json} lines

type RawList = import('../mesh/flashFormat.js').RawDataset[];

interface Lie {
  what: string;
  /** true: the file is meaningless, accepting it is silently wrong. */
  invalid: boolean;
  apply(list: RawList, r: () => number): RawList | Promise<RawList>;
}

const pick = <T>(r: () => number, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

function edit(list: RawList, name: string, f: (e: RawList[number]) => RawList[number] | null): RawList {
  return list.flatMap((e) => {
    if (e.name !== name) return [e];
    const g = f(e);
    return g ? [g] : [];
  });
}

function setValue(list: RawList, name: string, index: (n: number) => number, value: number): RawList {
  return edit(list, name, (e) => {
    const data = Float64Array.from(e.data as ArrayLike<number>);
    data[index(data.length)] = value;
    return { ...e, data: (e.dtype === '<i' ? Int32Array.from(data) : data) as ArrayLike<number> };
  });
}

function setScalar(list: RawList, table: string, key: string, value: number): RawList {
  return edit(list, table, (e) => {
    const cols = e.data as Map<string, ArrayLike<number> | string[]>;
    const names = (cols.get('name') as string[]).map((s) => s.trim());
    const values = Array.from(cols.get('value') as ArrayLike<number>);
    const at = names.indexOf(key);
    if (at >= 0) values[at] = value;
    return { ...e, data: new Map<string, ArrayLike<number> | string[]>([['name', cols.get('name')!], ['value', Int32Array.from(values)]]) };
  });
}

const BLOCK_ROWS = ['refine level', 'node type', 'gid', 'coordinates', 'block size', 'bounding box', 'dens', 'which child', 'processor number'];

/** FLASH's particle datasets (issue #18) for rows of [posx, posy, posz, mass], appended; `names` as written. */
function withParticleRows(list: RawList, rows: number[][], names?: string[]): RawList {
  const props = ['blk', 'mass', 'posx', 'posy', 'posz', 'tag'];
  const table = new Float64Array(rows.length * props.length);
  rows.forEach(([x, y, z, m], i) => table.set([1, m, x, y, z, i + 1], i * props.length));
  const written = (names ?? props).map((n) => n.padEnd(24));
  return [
    ...list,
    { name: 'particle names', shape: [written.length, 1], dtype: 'S24', data: written },
    { name: 'tracer particles', shape: [rows.length, props.length], dtype: '<d', data: table },
  ];
}

const particleRows = (r: () => number, mass: () => number) =>
  Array.from({ length: 1 + Math.floor(r() * 5) }, () => [0.1 + 0.8 * r(), 0.1 + 0.8 * r(), 0.1 + 0.8 * r(), mass()]);

const LIES: Lie[] = [
  // particles: the fuzz solves give no softening, so massive particles must be refused (typed), massless ones solved
  { what: 'massive particles and no softening length', invalid: true, apply: (l, r) => withParticleRows(l, particleRows(r, () => 1e-3 + r())) },
  { what: 'massless particles (not sources)', invalid: false, apply: (l, r) => withParticleRows(l, particleRows(r, () => 0)) },
  {
    what: "'particle names' and 'tracer particles' of different widths",
    invalid: true,
    apply: (l, r) => withParticleRows(l, particleRows(r, () => r()), pick(r, [['blk', 'mass', 'posx', 'posy', 'posz'], ['blk', 'mass', 'posx', 'posy', 'posz', 'tag', 'gpot']])),
  },
  {
    what: 'a particle position or mass NaN or infinite, or a negative mass',
    invalid: true,
    apply: (l, r) => {
      const rows = particleRows(r, () => r());
      const col = Math.floor(r() * 4); // 3: the mass
      rows[Math.floor(r() * rows.length)][col] = pick(r, col === 3 ? [NaN, Infinity, -1] : [NaN, Infinity, -Infinity]);
      return withParticleRows(l, rows);
    },
  },
  { what: 'NaN or infinite bounding box', invalid: true, apply: (l, r) => setValue(l, 'bounding box', (n) => Math.floor(r() * n), pick(r, [NaN, Infinity, -Infinity])) },
  { what: 'zero, negative or wrong block size', invalid: true, apply: (l, r) => setValue(l, 'block size', (n) => Math.floor(r() * n), pick(r, [0, -0.5, 1e-300, 0.3, 7])) },
  { what: 'NaN coordinates', invalid: true, apply: (l, r) => setValue(l, 'coordinates', (n) => Math.floor(r() * n), NaN) },
  {
    what: "'node type' changed",
    invalid: true,
    apply: (l, r) => edit(l, 'node type', (e) => {
      const d = Int32Array.from(e.data as ArrayLike<number>);
      const b = Math.floor(r() * d.length);
      d[b] = d[b] === 1 ? pick(r, [2, 3, 0, -1, 9]) : pick(r, [1, 0, 4, -7]);
      return { ...e, data: d };
    }),
  },
  {
    what: "'refine level' changed",
    invalid: true,
    apply: (l, r) => edit(l, 'refine level', (e) => {
      const d = Int32Array.from(e.data as ArrayLike<number>);
      const b = Math.floor(r() * d.length);
      d[b] = d[b] + pick(r, [1, -1, 2, 40, -5, 1000]);
      return { ...e, data: d };
    }),
  },
  {
    what: "'gid' parent or child changed",
    invalid: true,
    apply: (l, r) => edit(l, 'gid', (e) => {
      const d = Int32Array.from(e.data as ArrayLike<number>);
      const cols = e.shape[1];
      const b = Math.floor(r() * e.shape[0]);
      const c = 6 + Math.floor(r() * (cols - 6));
      const old = d[b * cols + c];
      let v = pick(r, [-1, 0, 1, 2, 5, 9, 10, 99, -32, 2 ** 31 - 1]);
      if (v === old) v = old === -1 ? 3 : -1;
      d[b * cols + c] = v;
      return { ...e, data: d };
    }),
  },
  { what: "'gid' face neighbour changed (not interpreted)", invalid: false, apply: (l, r) => setValue(l, 'gid', () => Math.floor(r() * 6), pick(r, [-1, 3, -32])) },
  {
    what: 'a per-block dataset with extra rows',
    invalid: true,
    apply: (l, r) => {
      const name = pick(r, BLOCK_ROWS.slice(0, 7));
      return edit(l, name, (e) => {
        const rowLen = e.shape.slice(1).reduce((a, b) => a * b, 1);
        const k = 1 + Math.floor(r() * 3);
        const data = new Float64Array((e.shape[0] + k) * rowLen);
        data.set(e.data as ArrayLike<number>);
        return { ...e, shape: [e.shape[0] + k, ...e.shape.slice(1)], data: e.dtype === '<i' ? Int32Array.from(data) : data };
      });
    },
  },
  {
    what: 'a dataset reshaped (same values, other dimensions)',
    invalid: true,
    apply: (l, r) => {
      const name = pick(r, ['gid', 'bounding box', 'coordinates', 'block size', 'dens', 'unknown names']);
      return edit(l, name, (e) => {
        const total = e.shape.reduce((a, b) => a * b, 1);
        const shapes: Record<string, number[][]> = {
          gid: [[total / 5, 5], [total]],
          'bounding box': [[total / 6, 6], [total / 3, 3]],
          coordinates: [[total / 3, 1, 3], [total]],
          'block size': [[total], [total / 3, 3, 1]],
          dens: [[e.shape[0], 8, 8, 4, 2], [e.shape[0] * 2, 8, 8, 4], [e.shape[0], 512]],
          'unknown names': [[1], [1, 1, 1]],
        };
        return { ...e, shape: pick(r, shapes[name]) };
      });
    },
  },
  { what: "integer scalar 'nxb' lies", invalid: true, apply: (l, r) => setScalar(l, 'integer scalars', pick(r, ['nxb', 'nyb', 'nzb']), pick(r, [0, -8, 16, 4, 1e6, 2 ** 31 - 1])) },
  { what: "integer scalar 'dimensionality' lies", invalid: true, apply: (l, r) => setScalar(l, 'integer scalars', 'dimensionality', pick(r, [0, 2, 4, 7, -1])) },
  { what: "integer scalar 'globalnumblocks' lies (not interpreted)", invalid: false, apply: (l, r) => setScalar(l, 'integer scalars', 'globalnumblocks', pick(r, [0, 1e9, -3])) },
  {
    what: "'unknown names' names a missing variable",
    invalid: true,
    apply: (l) => edit(l, 'unknown names', (e) => ({ ...e, data: ['dens', 'pres'], shape: [2, 1] })),
  },
  {
    what: 'a required dataset missing',
    invalid: true,
    apply: (l, r) => edit(l, pick(r, ['refine level', 'node type', 'gid', 'bounding box', 'coordinates', 'block size', 'dens', 'unknown names']), () => null),
  },
  {
    what: 'block metadata stored as strings',
    invalid: true,
    apply: (l, r) => edit(l, pick(r, ['bounding box', 'refine level', 'node type']), (e) => ({ ...e, dtype: 'S8', data: Array.from(e.data as ArrayLike<number>, String) })),
  },
  {
    what: "'dens' stored as int32 (values kept)",
    invalid: false,
    apply: (l) => edit(l, 'dens', (e) => ({ ...e, dtype: '<i', data: Int32Array.from(e.data as ArrayLike<number>, (v) => Math.round(v)) })),
  },
  // in a leaf block (the base's block 1 is its only parent, whose density the solve does not use)
  { what: 'NaN, infinite or negative density', invalid: true, apply: (l, r) => setValue(l, 'dens', (n) => 512 + Math.floor(r() * (n - 512)), pick(r, [NaN, -1, Infinity])) },
  {
    what: 'a billion-block claim (chunked datasets grown, no data)',
    invalid: true,
    apply: (l) => l, // done in writeRaw (needs resize)
  },
];

async function writeRaw(path: string, list: RawList, grow: number): Promise<void> {
  const { h5wasm } = await import('../mesh/hdf5.js');
  const h5 = await h5wasm();
  const f = new h5.File(path, 'w');
  try {
    for (const e of list) {
      const perBlock = grow > 0 && BLOCK_ROWS.includes(e.name) && !(e.data instanceof Map);
      if (perBlock) {
        const rest = e.shape.slice(1);
        const ds = f.create_dataset({ name: e.name, data: e.data as never, shape: e.shape, dtype: e.dtype as never, maxshape: [null, ...rest], chunks: [1, ...rest] });
        ds.resize([grow, ...rest]);
      } else {
        f.create_dataset({ name: e.name, data: e.data as never, shape: e.shape, dtype: e.dtype as never });
      }
    }
  } finally {
    f.close();
  }
}

interface Base {
  name: string;
  bytes: Buffer;
}

async function bases(dir: string, sedov: string | undefined): Promise<{ files: Base[]; list: RawList }> {
  const { problemData } = await import('../validation/problemFiles.js');
  const { flashDatasets, writeFlashFile } = await import('../mesh/flashWrite.js');
  const fixTime = (d: ReturnType<typeof problemData>) => {
    const info = d.extra.find((e) => e.name === 'sim info');
    (info?.data as Map<string, string[]>)?.set('file creation time', ['2026-11-25 (fuzz base)'.padEnd(80)]);
    return d;
  };
  const files: Base[] = [];
  for (const [name, d] of [
    ['uniform-2', fixTime(problemData('uniform', { levels: 2 }))],
    ['maclaurin-3', fixTime(problemData('maclaurin', { levels: 3, subsample: 1 }))],
  ] as const) {
    const p = join(dir, `${name}.h5`);
    await writeFlashFile(p, d);
    files.push({ name, bytes: readFileSync(p) });
  }
  if (sedov && existsSync(sedov)) files.push({ name: 'sedov-2d', bytes: readFileSync(sedov) });
  return { files, list: flashDatasets(fixTime(problemData('uniform', { levels: 2 }))) };
}

/** The mutated file of case `i` (deterministic in seed and i), written to `path`. */
async function makeCase(i: number, seed: number, b: { files: Base[]; list: RawList }, path: string): Promise<{ kind: string; what: string; invalid: boolean }> {
  const r = rng(seed * 1_000_003 + i * 7919);
  const u = r();
  if (u < 0.45) {
    const base = b.files[Math.floor(r() * b.files.length)];
    const bytes = Buffer.from(base.bytes);
    const n = 1 + Math.floor(r() * 8);
    const at: string[] = [];
    for (let k = 0; k < n; k++) {
      const head = Math.min(bytes.length, 8192);
      const pos = r() < 0.7 ? Math.floor(r() * head) : Math.floor(r() * bytes.length);
      bytes[pos] = Math.floor(r() * 256);
      at.push(String(pos));
    }
    writeFileSync(path, bytes);
    return { kind: 'byte flips', what: `${base.name}: ${n} byte(s) at ${at.join(',')}`, invalid: false };
  }
  if (u < 0.6) {
    const base = b.files[Math.floor(r() * b.files.length)];
    const len = Math.floor(r() * base.bytes.length);
    writeFileSync(path, base.bytes.subarray(0, len));
    return { kind: 'truncations', what: `${base.name}: ${len} of ${base.bytes.length} bytes`, invalid: true };
  }
  const lie = LIES[Math.floor(r() * LIES.length)];
  const list = await lie.apply(b.list, r);
  await writeRaw(path, list, lie.what.startsWith('a billion') ? pick(r, [1e8, 1e9, 2 ** 40]) : 0);
  return { kind: 'shape and value lies', what: lie.what, invalid: lie.invalid };
}

async function runCase(i: number, seed: number, b: { files: Base[]; list: RawList }, root: string): Promise<CaseResult> {
  const { AmrgravError } = await import('../solver/errors.js');
  const { solveFlashFile } = await import('../solver/solveFile.js');
  const { readFlashFile } = await import('../mesh/flashRead.js');
  const { plotSliceFile } = await import('../validation/plot/slicePlot.js');
  const dir = join(root, `case-${i}`);
  mkdirSync(dir, { recursive: true });
  const input = join(dir, 'in.h5');
  const out = join(dir, 'out.h5');
  const png = join(dir, 'out.png');
  const c = await makeCase(i, seed, b, input);
  const before = sha(input);
  const outcomes: Outcome[] = [];
  const details: string[] = [];
  const attempt = async (name: string, f: () => Promise<unknown>) => {
    try {
      await f();
      outcomes.push('accepted');
      return true;
    } catch (err) {
      if (err instanceof AmrgravError) outcomes.push('typed');
      else {
        outcomes.push('crash');
        details.push(`${name}: ${String((err as Error)?.stack ?? err).slice(0, 400)}`);
      }
      return false;
    }
  };
  // AMRGRAV_FUZZ_SELFTEST proves the harness sees each failure: case 0 throws an untyped error, exits, hangs,
  // modifies its input or leaves a file behind
  const selftest = i === 0 ? process.env.AMRGRAV_FUZZ_SELFTEST : undefined;
  if (selftest === 'exit') process.exit(3);
  if (selftest === 'hang') for (;;);
  let solved = await attempt('solve', () =>
    selftest === 'throw' ? Promise.reject(new TypeError('fuzz self-test')) : solveFlashFile(input, out, { solver: { backend: 'cpu', threads: 1 } }),
  );
  if (selftest === 'modify') writeFileSync(input, 'x', { flag: 'a' });
  if (selftest === 'leave') writeFileSync(join(dir, '.out.h5.123.tmp'), '');
  if (solved) {
    // an accepted file must give an output that reads back: gpot finite, the input's density unchanged
    const ok = await attempt('check', async () => {
      const [a, o] = [await readFlashFile(input), await readFlashFile(out)];
      const g = o.variables.get('gpot');
      if (!g || !g.every(Number.isFinite)) throw new Error('gpot missing or not finite');
      const da = a.variables.get('dens')!;
      const dout = o.variables.get('dens')!;
      if (da.length !== dout.length || da.some((v, k) => !Object.is(v, dout[k]))) throw new Error('dens changed');
    });
    if (!ok) {
      outcomes[outcomes.length - 1] = 'silentlyWrong';
      solved = false;
    } else outcomes.pop();
    if (c.invalid) {
      outcomes.push('silentlyWrong');
      details.push(`accepted a meaningless file: ${c.what}`);
    }
  }
  if (i % 4 === 0) await attempt('plot', () => plotSliceFile(input, png, { variable: 'dens' }));
  const inputModified = sha(input) !== before;
  const allowed = new Set(['in.h5', 'out.h5', 'out.png']);
  const leftBehind = readdirSync(dir).filter((f) => !allowed.has(f));
  const rank: Outcome[] = ['crash', 'silentlyWrong', 'typed', 'accepted'];
  const outcome = rank.find((o) => outcomes.includes(o)) ?? 'accepted';
  rmSync(dir, { recursive: true, force: true });
  return { index: i, kind: c.kind, what: c.what, outcome, inputModified, leftBehind, ...(details.length ? { detail: details.join('; ') } : {}) };
}

async function worker(seed: number, from: number, to: number, root: string, sedov: string | undefined): Promise<void> {
  let current = -1;
  const die = (err: unknown) => {
    process.stdout.write(`CRASH ${current} ${JSON.stringify(String((err as Error)?.stack ?? err).slice(0, 600))}\n`);
    process.exit(70);
  };
  process.on('uncaughtException', die);
  process.on('unhandledRejection', die);
  const baseDir = join(root, `bases-${process.pid}`);
  mkdirSync(baseDir, { recursive: true });
  const b = await bases(baseDir, sedov);
  for (let i = from; i < to; i++) {
    current = i;
    process.stdout.write(`START ${i}\n`);
    const r = await runCase(i, seed, b, root);
    process.stdout.write(`RESULT ${JSON.stringify(r)}\n`);
  }
  rmSync(baseDir, { recursive: true, force: true });
}

// ---------------------------------------------------------------------------------------------------------------
// parent: runs workers under a watchdog, then the bad command lines

function runWorkers(seed: number, files: number, root: string, timeoutS: number, sedov: string | undefined): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  return new Promise((done) => {
    const startFrom = (from: number) => {
      if (from >= files) return done(results);
      const child = spawn(process.execPath, [WORKER, '--worker', String(seed), String(from), String(files), root, sedov ?? ''], { stdio: ['ignore', 'pipe', 'pipe'] });
      let current = from;
      let buffer = '';
      let stderr = '';
      let timer: NodeJS.Timeout | null = null;
      let hung = false;
      const arm = (seconds: number) => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => {
          hung = true;
          child.kill('SIGKILL');
        }, seconds * 1000);
      };
      arm(Math.max(timeoutS, 600)); // starting a worker (loading h5wasm, building the bases) is not a case
      child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
      child.stdout.on('data', (d: Buffer) => {
        buffer += d.toString();
        let nl;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line.startsWith('START ')) {
            current = Number(line.slice(6));
            arm(timeoutS);
          } else if (line.startsWith('RESULT ')) {
            results.push(JSON.parse(line.slice(7)) as CaseResult);
            current++;
          } else if (line.startsWith('CRASH ')) {
            stderr = line;
          }
        }
      });
      child.on('exit', (code) => {
        if (timer) clearTimeout(timer);
        if (current >= files && code === 0) return done(results);
        // the case in progress killed the worker or hung: record it, clean its folder, go on with the next
        const dir = join(root, `case-${current}`);
        const leftBehind = existsSync(dir) ? readdirSync(dir).filter((f) => !['in.h5', 'out.h5', 'out.png'].includes(f)) : [];
        rmSync(dir, { recursive: true, force: true });
        results.push({ index: current, kind: 'unknown (worker died)', what: `case ${current}`, outcome: hung ? 'hang' : 'crash', inputModified: false, leftBehind, detail: stderr.slice(-600) });
        startFrom(current + 1);
      });
    };
    startFrom(0);
  });
}

/** Command lines that must end in a typed error or a usage message (exit 1 or 2), never a stack or a hang. */
function cliCases(dir: string, good: string): string[][] {
  const out = join(dir, 'o.h5');
  const fifo = join(dir, 'fifo');
  spawnSync('mkfifo', [fifo]);
  mkdirSync(join(dir, 'adir'), { recursive: true });
  writeFileSync(join(dir, 'text.h5'), 'not hdf5\n');
  return [
    [],
    ['frobnicate'],
    ['solve'],
    ['solve', good],
    ['solve', good, '-o'],
    ['solve', good, good, '-o', out],
    ['solve', join(dir, 'missing.h5'), '-o', out],
    ['solve', join(dir, 'adir'), '-o', out],
    ['solve', '/dev/null', '-o', out],
    ['solve', join(dir, 'text.h5'), '-o', out],
    ['solve', good, '-o', good],
    ['solve', good, '-o', fifo],
    ['solve', good, '-o', join(dir, 'adir')],
    ['solve', good, '-o', join(dir, 'no', 'dir', 'x.h5')],
    ['solve', good, '-o', out, '--theta', 'nan'],
    ['solve', good, '-o', out, '--theta', '-1'],
    ['solve', good, '-o', out, '--order', '3'],
    ['solve', good, '-o', out, '--var', 'nope'],
    ['solve', good, '-o', out, '--threads', '1e9'],
    ['solve', good, '-o', out, '--boundary', 'xyzx'],
    ['solve', good, '-o', out, '--G', '0'],
    ['solve', good, '-o', out, '--unknown-flag'],
    ['plot', good, '--var', 'nope', '-o', join(dir, 'p.png')],
    ['plot', good, '--var', 'relerr', '-o', join(dir, 'p.png')],
    ['plot', good, '--var', 'dens', '--slice', 'w=1', '-o', join(dir, 'p.png')],
    ['plot', good, '--var', 'dens', '--slice', 'z=1e9', '-o', join(dir, 'p.png')],
    ['plot', good, '--var', 'dens', '--slice', 'z=abc', '-o', join(dir, 'p.png')],
    ['plot', good, '--var', 'dens', '-o', good],
    ['plot', good, '--var', 'dens', '-o', fifo],
    ['make'],
    ['make', 'torus', '-o', out],
    ['make', 'uniform', '-o', out, '--levels', '0'],
    ['make', 'uniform', '-o', out, '--levels', '1e9'],
    ['make', 'maclaurin', '-o', out, '--levels', '12'],
    ['make', 'maclaurin', '-o', out, '--e', '1'],
    ['make', 'sphere', '-o', join(dir, 'adir')],
    ['bench', '--cells', '2e9'],
    ['bench', '--cells', '-5'],
    ['bench', '--cells', '1e30'],
    ['bench', '--grid', '0'],
    ['bench', '--problem', 'torus'],
    ['validate', 'nothing'],
    ['validate', 'maclaurin', '--levels', '99'],
    ['validate', 'maclaurin', '--theta', '2'],
    ['validate', 'maclaurin', '--sweep', '--plot', join(dir, 'adir')],
    ['validate', 'periodic', '--problem', 'nope'],
  ];
}

function runCli(root: string, timeoutS: number): CaseResult[] {
  const dir = join(root, 'cli');
  mkdirSync(dir, { recursive: true });
  const good = join(dir, 'good.h5');
  spawnSync(process.execPath, [CLI, 'make', 'uniform', '--levels', '1', '-o', good], { encoding: 'utf8' });
  const pristine = readFileSync(good);
  const before = sha(good);
  const results: CaseResult[] = [];
  const expected = new Set(['good.h5', 'fifo', 'adir', 'text.h5']);
  cliCases(dir, good).forEach((args, index) => {
    const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: timeoutS * 1000, killSignal: 'SIGKILL' });
    const stack = /\n\s+at .*:\d+:\d+\)?/.test(r.stderr ?? '') || /RangeError|TypeError|ReferenceError/.test(r.stderr ?? '');
    let outcome: Outcome;
    if (r.error && (r.error as NodeJS.ErrnoException).code === 'ETIMEDOUT') outcome = 'hang';
    else if (r.signal || stack || (r.status !== 0 && r.status !== 1 && r.status !== 2)) outcome = 'crash';
    else outcome = r.status === 0 ? 'accepted' : 'typed';
    const leftBehind = readdirSync(dir).filter((f) => !expected.has(f));
    for (const f of leftBehind) rmSync(join(dir, f), { recursive: true, force: true });
    for (const f of readdirSync(join(dir, 'adir'))) leftBehind.push(`adir/${f}`);
    const inputModified = !existsSync(good) || sha(good) !== before;
    if (inputModified) {
      rmSync(good, { recursive: true, force: true });
      writeFileSync(good, pristine); // each case starts from the same input
    }
    results.push({
      index,
      kind: 'bad command lines',
      what: `amrgrav ${args.join(' ')}`,
      outcome,
      inputModified,
      leftBehind,
      ...(outcome === 'crash' || outcome === 'hang' ? { detail: `status ${r.status} signal ${r.signal}: ${(r.stderr ?? '').slice(0, 400)}` } : {}),
    });
  });
  return results;
}

/** Runs the fuzz suite; the report lists every case and its outcome. */
export async function runFuzz(opts: FuzzOptions = {}): Promise<FuzzReport> {
  const seed = opts.seed ?? 15;
  const timeoutS = opts.caseTimeoutS ?? 180;
  const root = mkdtempSync(join(tmpdir(), 'amrgrav-fuzz-'));
  try {
    const cases = await runWorkers(seed, opts.files ?? 300, root, timeoutS, opts.sedov ?? DEFAULT_SEDOV);
    if (opts.cli ?? true) cases.push(...runCli(root, timeoutS));
    const stray = readdirSync(root).filter((f) => !f.startsWith('bases-') && f !== 'cli');
    if (stray.length) cases.push({ index: -1, kind: 'cleanup', what: 'case folders left', outcome: 'crash', inputModified: false, leftBehind: stray });
    return { seed, cases };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

/** The table of bench/RESULTS.md: per kind of input, how many were tried and how each ended. */
export function fuzzTable(report: FuzzReport): string {
  const kinds = [...new Set(report.cases.map((c) => c.kind))];
  const row = (label: string, cs: CaseResult[]) => {
    const n = (o: Outcome) => cs.filter((c) => c.outcome === o).length;
    return `| ${label} | ${cs.length} | ${n('typed')} | ${n('accepted')} | ${n('crash')} | ${n('hang')} | ${n('silentlyWrong')} | ${cs.filter((c) => c.inputModified).length} | ${cs.filter((c) => c.leftBehind.length > 0).length} |`;
  };
  return [
    '| inputs | tried | typed error | accepted | crash | hang | silently wrong | input modified | file left behind |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...kinds.map((k) => row(k, report.cases.filter((c) => c.kind === k))),
    row('**all**', report.cases),
  ].join('\n');
}

/** The cases that are not a typed error or a checked acceptance, for a failing test's message. */
export function fuzzFailures(report: FuzzReport): CaseResult[] {
  return report.cases.filter((c) => c.outcome === 'crash' || c.outcome === 'hang' || c.outcome === 'silentlyWrong' || c.inputModified || c.leftBehind.length > 0);
}

const args = process.argv.slice(2);
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (args[0] === '--worker') {
    await worker(Number(args[1]), Number(args[2]), Number(args[3]), args[4], args[5] || undefined);
  } else {
    const get = (k: string) => {
      const i = args.indexOf(k);
      return i >= 0 ? args[i + 1] : undefined;
    };
    const t0 = performance.now();
    const report = await runFuzz({
      seed: Number(get('--seed') ?? 15),
      files: Number(get('--files') ?? 300),
      cli: !args.includes('--no-cli'),
      caseTimeoutS: Number(get('--timeout') ?? 180),
    });
    console.log(fuzzTable(report));
    console.log(`\nseed ${report.seed}, ${((performance.now() - t0) / 1e3).toFixed(1)} s`);
    if (args.includes('--verbose')) for (const c of report.cases.filter((c) => c.outcome === 'accepted')) console.log(`accepted ${c.kind} #${c.index}: ${c.what}`);
    for (const f of fuzzFailures(report)) console.log(`FAIL ${f.kind} #${f.index} (${f.what}): ${f.outcome}${f.inputModified ? ', input modified' : ''}${f.leftBehind.length ? `, left ${f.leftBehind.join(' ')}` : ''} ${f.detail ?? ''}`);
    process.exitCode = fuzzFailures(report).length > 0 ? 1 : 0;
  }
}
