/**
 * The self-term models on the MacLaurin spheroid (isolated, AMR): error against the analytic potential by region
 * (interior cells, surface cells with a partial volume fraction, exterior) and by cell size, for 'cube' and
 * 'lattice'. Run: `node dist/bench/selfTermBench.js [--levels 5] [--e 0.9] [--subsample 4] [--theta 0.5] [--direct]`.
 * Writes JSON to stdout.
 */
import { parseArgs } from 'node:util';
import { GravitySolver } from '../solver/gravitySolver.js';
import { maclaurinProblem, type MaclaurinProblem } from '../validation/maclaurinSetup.js';

interface RegionErrors {
  cells: number;
  maxRelError: number;
  meanRelError: number;
  /** Mean of (phi - phi_analytic) / |phi_analytic|: a systematic offset shows here, noise averages out. */
  meanSignedRelError: number;
}

function regionOf(p: MaclaurinProblem, i: number): string {
  const c = p.cells;
  const f = c.mass[i] / (p.params.rho * c.size[i] ** 3); // volume fraction (the floor is 1e-10)
  return f > 1 - 1e-9 ? 'interior' : f > 1e-6 ? 'surface' : 'exterior';
}

/**
 * Errors against the analytic potential times `scale` (1, or the cells' total mass over the spheroid's: the
 * surface volume fractions miss the mass by ~1e-3, which shifts every cell's error; scaling removes that part).
 */
function errorsBy(p: MaclaurinProblem, phi: Float64Array, key: (i: number) => string, scale = 1): Record<string, RegionErrors> {
  const out: Record<string, RegionErrors> = {};
  for (let i = 0; i < phi.length; i++) {
    const ref = p.analytic[i] * scale;
    const e = (phi[i] - ref) / Math.abs(ref);
    const r = (out[key(i)] ??= { cells: 0, maxRelError: 0, meanRelError: 0, meanSignedRelError: 0 });
    r.cells++;
    r.maxRelError = Math.max(r.maxRelError, Math.abs(e));
    r.meanRelError += Math.abs(e);
    r.meanSignedRelError += e;
  }
  for (const r of Object.values(out)) {
    r.meanRelError /= r.cells;
    r.meanSignedRelError /= r.cells;
  }
  return out;
}

async function runSelfTermBench(o: { levels: number; e: number; subsample: number; theta: number; direct: boolean }) {
  const p = maclaurinProblem({ levels: o.levels, e: o.e, subsample: o.subsample });
  const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };
  let mass = 0;
  for (let i = 0; i < p.cells.count; i++) mass += p.cells.mass[i];
  const massRatio = mass / (((4 * Math.PI) / 3) * p.params.a1 * p.params.a1 * p.params.a3 * p.params.rho);
  const rows = [];
  for (const self of ['cube', 'lattice'] as const) {
    const s = new GravitySolver({ G: p.params.G, theta: o.theta, selfPotential: self, backend: 'cpu' });
    const r = o.direct ? await s.directCells(p.cells, { box }) : await s.solveCells(p.cells, { box });
    rows.push({
      selfPotential: self,
      all: errorsBy(p, r.potential, () => 'all').all,
      byRegion: errorsBy(p, r.potential, (i) => regionOf(p, i)),
      bySize: errorsBy(p, r.potential, (i) => `h=1/${Math.round(1 / p.cells.size[i])} ${regionOf(p, i)}`),
      sameMass: errorsBy(p, r.potential, (i) => regionOf(p, i), massRatio),
    });
  }
  return { levels: o.levels, e: o.e, subsample: o.subsample, cells: p.cells.count, massRatio, method: o.direct ? 'direct' : `tree theta ${o.theta}`, rows };
}

const { values } = parseArgs({
  options: {
    levels: { type: 'string' },
    e: { type: 'string' },
    subsample: { type: 'string' },
    theta: { type: 'string' },
    direct: { type: 'boolean' },
  },
});
const report = await runSelfTermBench({
  levels: Number(values.levels ?? 5),
  e: Number(values.e ?? 0.9),
  subsample: Number(values.subsample ?? 4),
  theta: Number(values.theta ?? 0.5),
  direct: !!values.direct,
});
console.log(JSON.stringify(report, null, 1));
