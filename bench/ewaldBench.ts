/**
 * Ewald benchmark: table build and cached-load times, table size, interpolation error against the exact sums,
 * and periodic vs isolated CPU solve times on the same input. Run: `node dist/bench/ewaldBench.js [--grid 64]`.
 * Writes JSON to stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ewaldTable } from '../solver/ewaldTable.js';
import { GravitySolver } from '../solver/gravitySolver.js';
import { benchDensity, gridCells } from '../validation/gridCells.js';

type Axes = [boolean, boolean, boolean];

function interpolationError(L: [number, number, number], periodic: Axes, reach: number, n: number) {
  let a = 12345;
  const rand = () => ((a = (Math.imul(a, 1664525) + 1013904223) >>> 0) / 4294967296);
  const at = new Float64Array(3 * n);
  for (let i = 0; i < n; i++) for (let d = 0; d < 3; d++) at[3 * i + d] = (2 * rand() - 1) * L[d] * (periodic[d] ? reach : 1);
  const t = ewaldTable({ L, periodic, at, exact: true });
  const Lm = Math.max(...L);
  let c = 0, g = 0;
  for (let i = 0; i < n; i++) {
    c = Math.max(c, Math.abs(t.lookup![4 * i] - t.exact![20 * i]) * Lm);
    for (let d = 0; d < 3; d++) g = Math.max(g, Math.abs(t.lookup![4 * i + 1 + d] - t.exact![20 * i + 1 + d]) * Lm * Lm);
  }
  return { maxErrorC: c, maxErrorGrad: g };
}

export async function runEwaldBench(grid: number) {
  const dir = mkdtempSync(join(tmpdir(), 'amrgrav-ewald-bench-'));
  const saved = process.env.AMRGRAV_CACHE_DIR;
  process.env.AMRGRAV_CACHE_DIR = dir;
  const tables = [];
  try {
    const shapes: { name: string; L: [number, number, number]; periodic: Axes }[] = [
      { name: 'cube, 3 periodic', L: [1, 1, 1], periodic: [true, true, true] },
      { name: '1 x 0.75 x 1.25, 3 periodic', L: [1, 0.75, 1.25], periodic: [true, true, true] },
      { name: 'cube, x y periodic', L: [1, 1, 1], periodic: [true, true, false] },
      { name: 'cube, z periodic', L: [1, 1, 1], periodic: [false, false, true] },
    ];
    for (const s of shapes) {
      const built = ewaldTable({ L: s.L, periodic: s.periodic, memoryCache: false });
      const loaded = ewaldTable({ L: s.L, periodic: s.periodic, memoryCache: false });
      tables.push({
        shape: s.name,
        gridIntervals: built.n,
        points: built.points,
        megabytes: built.bytes / 2 ** 20,
        secondsBuild: built.secondsBuild,
        secondsCachedLoad: loaded.secondsLoad,
        loadedFrom: loaded.source,
        halfBox: interpolationError(s.L, s.periodic, 0.5, 20000),
        fullReach: interpolationError(s.L, s.periodic, 0.5625, 20000),
      });
    }
  } finally {
    if (saved === undefined) delete process.env.AMRGRAV_CACHE_DIR;
    else process.env.AMRGRAV_CACHE_DIR = saved;
    rmSync(dir, { recursive: true, force: true });
  }
  const cells = gridCells(grid, benchDensity);
  const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
  const solves = [];
  // the periodic walk with the correction expanded about each group's centre (the default; it applies to groups
  // under one table spacing, e.g. 32-cell groups from 128^3 up) and with a table lookup per pair
  const variants = [
    { boundary: 'isolated', ewaldExpansion: true },
    { boundary: 'periodic', ewaldExpansion: true },
    { boundary: 'periodic', ewaldExpansion: false },
  ] as const;
  const reps = grid >= 96 ? 1 : 2;
  for (const { boundary, ewaldExpansion } of variants) {
    const s = new GravitySolver({ boundary, ewaldExpansion, backend: 'cpu' });
    await s.solveCells(cells, { box }); // warm: table in memory, pages touched
    let best = Infinity;
    let stats;
    for (let r = 0; r < reps; r++) {
      const res = await s.solveCells(cells, { box });
      if (res.stats.seconds.total < best) { best = res.stats.seconds.total; stats = res.stats; }
    }
    solves.push({ boundary, ewaldExpansion, cells: cells.x.length, seconds: best, walkSeconds: stats!.seconds.walk,
      interactionsPerCell: stats!.interactionsPerCell, approxPerCell: stats!.approxInteractionsPerCell,
      directPerCell: stats!.directInteractionsPerCell, threads: stats!.threads });
  }
  return { tables, solves, periodicOverIsolated: solves[1].seconds / solves[0].seconds,
    perPairOverIsolated: solves[2].seconds / solves[0].seconds };
}

const gi = process.argv.indexOf('--grid');
console.log(JSON.stringify(await runEwaldBench(gi > 0 ? Number(process.argv[gi + 1]) : 48), null, 1));
