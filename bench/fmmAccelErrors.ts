/**
 * The acceleration error of method 'fmm' against direct summation of the same cells at EVERY cell (issue #20: "2e-5
 * ... accelerations likewise"), three ways: per cell |da_i| / |a_i| (max, p99, median), relative to the largest
 * |a| (max_i |da_i| / max_j |a_j|), and per cell against a floor, |da_i| / max(|a_i|, G |M| / L^2) (|M| the total
 * |mass|, L the cells' box's longest side: the field of the whole mass one box side away, the scale the FMM's
 * acceleration rule is relative to), with where the worst cells are (position in the box, |a_i| / max |a|, cell size
 * over L). Also max |a| / (G |M| / L^2), the potential's max relative error, the lists per cell and the solve's
 * seconds. G = 1, no self term, backend cpu.
 * The direct sums (native, O(N^2)) are cached under $TMPDIR/amrgrav-direct (they do not depend on the FMM's options).
 * Run: `node dist/bench/fmmAccelErrors.js --mesh uniform32,maclaurin5,amr4,nested16 [--threads 2]
 * [--fmm-order 7 --fmm-theta 0.65 --fmm-tol 2e-4 --fmm-acc-tol 1e-5] [--json]`. Meshes: uniformN (N^3 random
 * masses, as bench/fmmBench.ts), maclaurinL, amrL (validation/randomAmr.ts, seed 3; amrLsS: seed S), nestedN
 * (three nested uniform levels of N^3 cells each, random masses: the prototype's, bench/prototypes/fmm).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GravitySolver } from '../solver/gravitySolver.js';
import type { SolverOptions } from '../solver/options.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { randomAmrCells } from '../validation/randomAmr.js';
import { rng } from '../validation/random.js';
import type { GridCells as Cells } from '../validation/gridCells.js';


function fromLists(x: number[], y: number[], z: number[], m: number[], h: number[]): Cells {
  return { x: Float64Array.from(x), y: Float64Array.from(y), z: Float64Array.from(z), mass: Float64Array.from(m), size: Float64Array.from(h) };
}

function uniformRandom(n: number): Cells {
  const u = rng(5);
  const x: number[] = [], y: number[] = [], z: number[] = [], m: number[] = [], s: number[] = [];
  const h = 1 / n;
  for (let a = 0; a < n; a++)
    for (let b = 0; b < n; b++)
      for (let i = 0; i < n; i++) {
        x.push((i + 0.5) * h);
        y.push((b + 0.5) * h);
        z.push((a + 0.5) * h);
        m.push(u() * h ** 3);
        s.push(h);
      }
  return fromLists(x, y, z, m, s);
}

/** Three nested uniform levels: n^3 over the box, the central half at 2n, its central half at 4n. */
function nested(n: number): Cells {
  const u = rng(7);
  const x: number[] = [], y: number[] = [], z: number[] = [], m: number[] = [], s: number[] = [];
  for (let lev = 0; lev < 3; lev++) {
    const nn = n << lev, h = 1 / nn;
    const lo = lev === 0 ? 0 : 0.5 - 0.25 / (1 << (lev - 1)), hi = 1 - lo;
    const ilo = 0.5 - 0.25 / (1 << lev), ihi = 1 - ilo;
    for (let k = 0; k < nn; k++)
      for (let j = 0; j < nn; j++)
        for (let i = 0; i < nn; i++) {
          const p = [(i + 0.5) * h, (j + 0.5) * h, (k + 0.5) * h];
          if (p.some((v) => v < lo || v > hi)) continue;
          if (lev < 2 && p.every((v) => v > ilo && v < ihi)) continue;
          x.push(p[0]);
          y.push(p[1]);
          z.push(p[2]);
          m.push(u() * h ** 3);
          s.push(h);
        }
  }
  return fromLists(x, y, z, m, s);
}

export function meshOf(name: string): Cells {
  const num = Number(name.replace(/^[a-z]+/, ''));
  if (name.startsWith('uniform')) return uniformRandom(num);
  if (name.startsWith('maclaurin')) return maclaurinProblem({ levels: num }).cells;
  const amr = /^amr(\d+)(?:s(\d+))?$/.exec(name);  // amrL (seed 3) or amrLsS
  if (amr) return randomAmrCells({ levels: Number(amr[1]), seed: amr[2] === undefined ? 3 : Number(amr[2]) });
  if (name.startsWith('nested')) return nested(num);
  throw new Error(`unknown mesh ${name}: uniformN, maclaurinL, amrL, amrLsS (seed S) or nestedN`);
}

interface Field {
  phi: Float64Array;
  ax: Float64Array;
  ay: Float64Array;
  az: Float64Array;
}

const common: SolverOptions = { G: 1, selfPotential: 'none', backend: 'cpu', accelerations: true };

async function directOf(name: string, c: Cells, threads: number): Promise<Field> {
  const dir = join(tmpdir(), 'amrgrav-direct');
  const file = join(dir, `${name}.f64`);
  const n = c.x.length;
  if (existsSync(file)) {
    const all = new Float64Array(readFileSync(file).buffer.slice(0));
    if (all.length === 4 * n) return { phi: all.subarray(0, n), ax: all.subarray(n, 2 * n), ay: all.subarray(2 * n, 3 * n), az: all.subarray(3 * n) };
  }
  const r = await new GravitySolver({ ...common, threads }).directCells(c);
  const all = new Float64Array(4 * n);
  all.set(r.potential, 0);
  all.set(r.accelerations!.x, n);
  all.set(r.accelerations!.y, 2 * n);
  all.set(r.accelerations!.z, 3 * n);
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, Buffer.from(all.buffer));
  return { phi: all.subarray(0, n), ax: all.subarray(n, 2 * n), ay: all.subarray(2 * n, 3 * n), az: all.subarray(3 * n) };
}

export interface AccelErrors {
  phiMax: number;
  perCellMax: number;
  perCellP99: number;
  perCellMedian: number;
  ofMax: number;
  floored: number;
  maxOverScale: number;
  worst: { where: string; aOverMax: number; size: number; perCell: number; ofMax: number }[];
}

/** The errors of `r` against `ref` over every cell (see the file comment). */
export function accelErrors(c: Cells, ref: Field, r: Field): AccelErrors {
  const n = c.x.length;
  let amax = 0, phiMax = 0, absMass = 0;
  const mag = new Float64Array(n), err = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    mag[i] = Math.hypot(ref.ax[i], ref.ay[i], ref.az[i]);
    absMass += Math.abs(c.mass[i]);
    amax = Math.max(amax, mag[i]);
    err[i] = Math.hypot(r.ax[i] - ref.ax[i], r.ay[i] - ref.ay[i], r.az[i] - ref.az[i]);
    phiMax = Math.max(phiMax, Math.abs(r.phi[i] - ref.phi[i]) / Math.abs(ref.phi[i]));
  }
  const rel = Float64Array.from(err, (e, i) => e / mag[i]);
  const sorted = Float64Array.from(rel).sort();
  // the box's extent, to say where a cell lies (fractions of each side), and the scale G |M| / L^2
  const lo = [Infinity, Infinity, Infinity], hi = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < n; i++)
    [c.x[i], c.y[i], c.z[i]].forEach((v, d) => {
      lo[d] = Math.min(lo[d], v - c.size[i] / 2);
      hi[d] = Math.max(hi[d], v + c.size[i] / 2);
    });
  const L = Math.max(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]), scale = absMass / (L * L);
  let ofMax = 0, floored = 0;
  for (let i = 0; i < n; i++) {
    ofMax = Math.max(ofMax, err[i] / amax);
    floored = Math.max(floored, err[i] / Math.max(mag[i], scale));
  }
  const order = Array.from(rel.keys()).sort((a, b) => err[b] / amax - err[a] / amax);
  const worstOf = (i: number) => ({
    where: [c.x[i], c.y[i], c.z[i]].map((v, d) => ((v - lo[d]) / (hi[d] - lo[d])).toFixed(3)).join(','),
    aOverMax: mag[i] / amax,
    size: c.size[i] / L,
    perCell: rel[i],
    ofMax: err[i] / amax,
  });
  let worstRel = 0;
  for (let i = 1; i < n; i++) if (rel[i] > rel[worstRel]) worstRel = i;
  return {
    phiMax,
    perCellMax: sorted[n - 1],
    perCellP99: sorted[Math.floor(0.99 * (n - 1))],
    perCellMedian: sorted[Math.floor(0.5 * (n - 1))],
    ofMax,
    floored,
    maxOverScale: amax / scale,
    worst: [worstOf(worstRel), ...order.slice(0, 2).map(worstOf)],
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      mesh: { type: 'string', default: 'uniform32,maclaurin5,amr4,nested16' },
      threads: { type: 'string', default: '2' },
      'fmm-order': { type: 'string' },
      'fmm-theta': { type: 'string' },
      'fmm-tol': { type: 'string' },
      'fmm-acc-tol': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const threads = Number(values.threads);
  const fmm: SolverOptions = {
    ...common,
    threads,
    method: 'fmm',
    ...(values['fmm-order'] ? { fmmOrder: Number(values['fmm-order']) } : {}),
    ...(values['fmm-theta'] ? { fmmTheta: Number(values['fmm-theta']) } : {}),
    ...(values['fmm-tol'] ? { fmmTolerance: Number(values['fmm-tol']) } : {}),
    ...(values['fmm-acc-tol'] ? { fmmAccelTolerance: Number(values['fmm-acc-tol']) } : {}),
  };
  for (const name of values.mesh!.split(',')) {
    const c = meshOf(name);
    const ref = await directOf(name, c, threads);
    const r = await new GravitySolver(fmm).solveCells(c);
    const e = accelErrors(c, ref, { phi: r.potential, ax: r.accelerations!.x, ay: r.accelerations!.y, az: r.accelerations!.z });
    const s = r.stats;
    const row = { mesh: name, cells: c.x.length, seconds: s.seconds.total, m2lPerCell: s.approxInteractionsPerCell, p2pPerCell: s.directInteractionsPerCell, ...e };
    if (values.json) {
      console.log(JSON.stringify(row));
      continue;
    }
    const f = (v: number) => v.toExponential(1);
    console.log(
      `${name.padEnd(11)} ${String(c.x.length).padStart(7)} cells  phi ${f(e.phiMax)}  acc per cell max ${f(e.perCellMax)} p99 ${f(e.perCellP99)} ` +
        `median ${f(e.perCellMedian)}  of max|a| ${f(e.ofMax)}  floored(GM/L^2) ${f(e.floored)}  max|a|/(GM/L^2) ${e.maxOverScale.toFixed(1)}  ` +
        `M2L ${s.approxInteractionsPerCell.toFixed(2)} P2P ${s.directInteractionsPerCell.toFixed(0)} per cell  ${s.seconds.total.toFixed(2)} s`,
    );
    for (const w of e.worst)
      console.log(`    at (${w.where}) |a|/max ${f(w.aOverMax)} size ${f(w.size)}: per cell ${f(w.perCell)}, of max ${f(w.ofMax)}`);
  }
}

if (process.argv[1]?.endsWith('fmmAccelErrors.js'))
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
