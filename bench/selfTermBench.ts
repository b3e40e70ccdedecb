/**
 * The self-term models 'cube' and 'lattice' on isolated problems with closed-form potentials, error by region:
 * - maclaurin: the MacLaurin spheroid mesh (AMR, sharp surface with volume fractions): interior, surface and
 *   exterior cells, by cell size, and against the analytic potential scaled to the cells' total mass;
 * - gaussian: a smooth Gaussian blob on a uniform grid or (--amr) with its centre refined once: coarse, fine and
 *   the cells next to the fine-coarse boundary; masses sampled at cell centres or exact cell averages;
 * - cube: a uniform cube on cell faces (prism potential): interior and surface-layer cells, error in G rho h^2.
 * Run: `node dist/bench/selfTermBench.js --problem maclaurin|gaussian|cube [--levels 5] [--e 0.9]
 * [--subsample 4] [--theta 0.5] [--direct] [--n 24] [--amr] [--sampling centre|average]`. JSON on stdout.
 */
import { parseArgs } from 'node:util';
import { GravitySolver } from '../solver/gravitySolver.js';
import { prismPotential } from '../validation/analytic/index.js';
import { erfc } from '../validation/ewaldReference.js';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';

interface Cells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
}

interface RegionErrors {
  cells: number;
  maxRelError: number;
  meanRelError: number;
  /** Mean of (phi - ref) / |ref|: a systematic offset shows here, noise averages out. */
  meanSignedRelError: number;
}

/** Errors of phi against ref (relative, or divided by `unit` when given) grouped by key(i). */
function errorsBy(phi: Float64Array, ref: ArrayLike<number>, key: (i: number) => string, unit?: number) {
  const out: Record<string, RegionErrors> = {};
  for (let i = 0; i < phi.length; i++) {
    const e = (phi[i] - ref[i]) / (unit ?? Math.abs(ref[i]));
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

async function bothModels(cells: Cells, theta: number, direct: boolean, G: number, report: (phi: Float64Array) => object) {
  const box = { lo: [-1, -1, -1] as [number, number, number], hi: [2, 2, 2] as [number, number, number] };
  const rows = [];
  for (const self of ['cube', 'lattice'] as const) {
    const s = new GravitySolver({ G, theta, selfPotential: self, backend: 'cpu' });
    const r = direct ? await s.directCells(cells, { box }) : await s.solveCells(cells, { box });
    rows.push({ selfPotential: self, ...report(r.potential) });
  }
  return rows;
}

function maclaurin(o: { levels: number; e: number; subsample: number; theta: number; direct: boolean }) {
  const p = maclaurinProblem({ levels: o.levels, e: o.e, subsample: o.subsample });
  const c = p.cells;
  const region = (i: number) => {
    const f = c.mass[i] / (p.params.rho * c.size[i] ** 3); // volume fraction (the floor is 1e-10)
    return f > 1 - 1e-9 ? 'interior' : f > 1e-6 ? 'surface' : 'exterior';
  };
  let mass = 0;
  for (let i = 0; i < c.count; i++) mass += c.mass[i];
  // the surface volume fractions miss the spheroid's mass by ~1e-4..1e-3, which shifts every cell's error
  const massRatio = mass / (((4 * Math.PI) / 3) * p.params.a1 * p.params.a1 * p.params.a3 * p.params.rho);
  const sameMass = p.analytic.map((v) => v * massRatio);
  return bothModels(c, o.theta, o.direct, p.params.G, (phi) => ({
    all: errorsBy(phi, p.analytic, () => 'all').all,
    byRegion: errorsBy(phi, p.analytic, region),
    bySize: errorsBy(phi, p.analytic, (i) => `h=1/${Math.round(1 / c.size[i])} ${region(i)}`),
    sameMass: errorsBy(phi, sameMass, region),
  })).then((rows) => ({ cells: c.count, massRatio, rows }));
}

/** exp(-r^2 / 2 s^2) in [-1/2, 1/2]^3: n^3 cells, or with --amr the central 1/4 of the box refined once. */
function gaussian(o: { n: number; amr: boolean; sampling: string; theta: number; direct: boolean }) {
  const s = 0.1;
  const erf = (x: number) => 1 - erfc(x);
  const avg1 = (a: number, b: number) => (Math.sqrt(Math.PI / 2) * s * (erf(b / (Math.SQRT2 * s)) - erf(a / (Math.SQRT2 * s)))) / (b - a);
  const rho = (x: number, y: number, z: number, h: number) =>
    o.sampling === 'centre'
      ? Math.exp(-(x * x + y * y + z * z) / (2 * s * s))
      : avg1(x - h / 2, x + h / 2) * avg1(y - h / 2, y + h / 2) * avg1(z - h / 2, z + h / 2);
  const H = 1 / o.n;
  const inner = 0.125;
  const v: number[][] = [[], [], [], [], []];
  const tag: string[] = [];
  const add = (x: number, y: number, z: number, h: number, t: string) => {
    [x, y, z, rho(x, y, z, h) * h * h * h, h].forEach((a, k) => v[k].push(a));
    tag.push(t);
  };
  for (let i = 0; i < o.n; i++)
    for (let j = 0; j < o.n; j++)
      for (let k = 0; k < o.n; k++) {
        const [x, y, z] = [i, j, k].map((a) => -0.5 + (a + 0.5) * H);
        const d = Math.max(Math.abs(x), Math.abs(y), Math.abs(z));
        if (o.amr && d < inner) {
          for (let a = 0; a < 8; a++)
            add(x + ((a & 1) - 0.5) * (H / 2), y + (((a >> 1) & 1) - 0.5) * (H / 2), z + (((a >> 2) & 1) - 0.5) * (H / 2), H / 2,
              d > inner - H ? 'fine at boundary' : 'fine');
        } else add(x, y, z, H, o.amr && d < inner + H ? 'coarse at boundary' : 'coarse');
      }
  const cells = { x: Float64Array.from(v[0]), y: Float64Array.from(v[1]), z: Float64Array.from(v[2]),
    mass: Float64Array.from(v[3]), size: Float64Array.from(v[4]) };
  const M = (2 * Math.PI) ** 1.5 * s ** 3;
  const ref = cells.x.map((_, i) => {
    const r = Math.hypot(cells.x[i], cells.y[i], cells.z[i]);
    return (-M * erf(r / (Math.SQRT2 * s))) / r;
  });
  return bothModels(cells, o.theta, o.direct, 1, (phi) => ({ byRegion: errorsBy(phi, ref, (i) => tag[i]) })).then((rows) => ({
    cells: cells.x.length, sigmaOverH: s / H, rows }));
}

/** A unit cube of unit density on n^3 cells: error in units of G rho h^2. */
function cube(o: { n: number; theta: number; direct: boolean }) {
  const h = 1 / o.n;
  const v: number[][] = [[], [], [], [], []];
  for (let i = 0; i < o.n ** 3; i++) {
    const c = [i % o.n, Math.floor(i / o.n) % o.n, Math.floor(i / (o.n * o.n))].map((a) => (a + 0.5) * h);
    [...c, h * h * h, h].forEach((a, k) => v[k].push(a));
  }
  const [x, y, z, mass, size] = v.map((a) => Float64Array.from(a));
  const ref = x.map((_, i) => prismPotential([0, 0, 0], [1, 1, 1], 1, x[i], y[i], z[i], 1));
  const layer = (i: number) => (Math.min(x[i], y[i], z[i], 1 - x[i], 1 - y[i], 1 - z[i]) < h ? 'surface layer' : 'interior');
  return bothModels({ x, y, z, mass, size }, o.theta, o.direct, 1, (phi) => ({ errorOverGRhoH2: errorsBy(phi, ref, layer, h * h) }))
    .then((rows) => ({ cells: x.length, rows }));
}

const { values } = parseArgs({
  options: {
    problem: { type: 'string' },
    levels: { type: 'string' },
    e: { type: 'string' },
    subsample: { type: 'string' },
    theta: { type: 'string' },
    direct: { type: 'boolean' },
    n: { type: 'string' },
    amr: { type: 'boolean' },
    sampling: { type: 'string' },
  },
});
const theta = Number(values.theta ?? 0.5);
const direct = !!values.direct;
const problem = values.problem ?? 'maclaurin';
const result =
  problem === 'maclaurin'
    ? await maclaurin({ levels: Number(values.levels ?? 5), e: Number(values.e ?? 0.9), subsample: Number(values.subsample ?? 4), theta, direct })
    : problem === 'gaussian'
      ? await gaussian({ n: Number(values.n ?? 24), amr: !!values.amr, sampling: values.sampling ?? 'centre', theta, direct })
      : await cube({ n: Number(values.n ?? 17), theta, direct });
console.log(JSON.stringify({ problem, method: direct ? 'direct' : `tree theta ${theta}`, ...values, ...result }, null, 1));
