/**
 * `amrgrav validate particles` (issue #18): a uniform gas sphere on an AMR mesh with a Plummer cluster of softened
 * particles inside it and 64 probes, solved in one system solve. Against physics:
 *  - the probes (tree) against a float64 direct sum written here (validation/softenedDirect.ts), held to 2x the
 *    tree's own error on the same system (its cells and particles against method 'direct');
 *  - method 'direct' at the probes against the same sum (the reference's agreement: rounding);
 *  - linearity: gas alone + particles alone = both, at cells, particles and probes (to rounding);
 *  - probes on cell centres: the cell's potential without its self term (direct summation: to rounding; the tree:
 *    within its error).
 */
import { GravitySolver } from '../solver/gravitySolver.js';
import { selfPotentialModel, type SolverOptions } from '../solver/options.js';
import type { SystemSolveResult } from '../solver/gravitySolver.js';
import { maclaurinProblem } from './maclaurinSetup.js';
import { plummerCells } from './plummer.js';
import { rng } from './random.js';
import { softenedPotentialAt, type SoftSources } from './softenedDirect.js';
import { relativeErrorStats } from './errorMetrics.js';

export interface ParticlesRunOptions {
  /** Finest level of the gas sphere's mesh (level 1 = one block of 8^3 cells over the unit box). Default 4. */
  levels?: number;
  /** Particles of the Plummer cluster. Default 2000. */
  particles?: number;
  /** Solver options (backend 'auto' runs on the CPU: particles are a CPU feature so far). */
  solver?: SolverOptions;
}

/** Max and mean relative error. */
export interface ErrorPair {
  max: number;
  mean: number;
}

export interface ParticlesReport {
  cells: number;
  blocks: number;
  levels: number;
  particles: number;
  probes: number;
  softening: 'spline' | 'plummer';
  theta: number;
  backend: string;
  /** Probes (tree) against the float64 direct sum. */
  probeTreeError: ErrorPair;
  /** Probes (method 'direct') against the same sum: the two references agree to rounding. */
  probeDirectError: number;
  /** The tree on the same system against method 'direct': at the cells, at the particles. */
  cellTreeError: ErrorPair;
  particleTreeError: ErrorPair;
  /** probeTreeError.max / max(cellTreeError.max, particleTreeError.max): held to <= 2. */
  probeErrorRatio: number;
  /** max |gas + particles - both| / max |both| over cells, particles and probes (tree). */
  linearityGap: number;
  /** Probes on cell centres against the cells' potential without the self term: direct, and tree. */
  centreGapDirect: number;
  centreGapTree: number;
  /** Seconds of the tree system solve. */
  seconds: number;
}

/** Self-term coefficients c of -c G m / h (native/core/types.h). */
const selfCoefficient = { none: 0, cube: 2.380077363979554, lattice: 2.83729747948062 };

export async function runParticles(o: ParticlesRunOptions = {}): Promise<ParticlesReport> {
  const levels = o.levels ?? 4;
  const np = o.particles ?? 2000;
  const solverOpts: SolverOptions = { ...o.solver, backend: o.solver?.backend === 'cuda' ? 'cuda' : 'cpu' };
  const solver = new GravitySolver(solverOpts);
  const G = solver.options.G;
  const kind = solver.options.softening;

  // the gas: a uniform sphere of radius 0.25 in the unit box, surface blocks refined to `levels`
  const gas = maclaurinProblem({ levels, e: 0, a1: 0.25, rho: 1, subsample: 2, G });
  const cells = gas.cells;
  let gasMass = 0;
  for (let i = 0; i < cells.mass.length; i++) gasMass += cells.mass[i];
  // the cluster: Plummer scale radius 0.03 about the centre, truncated at 10 a, 30% of the gas mass; softening
  // lengths a/8 .. a/4 (per particle, so pairs take the larger)
  const a = 0.03;
  const pl = plummerCells({ points: np, seed: 18, rMax: 10 });
  const r = rng(41);
  const particles = {
    x: pl.x.map((v) => 0.5 + a * v),
    y: pl.y.map((v) => 0.5 + a * v),
    z: pl.z.map((v) => 0.5 + a * v),
    mass: new Float64Array(np).fill((0.3 * gasMass) / np),
    softening: Float64Array.from({ length: np }, () => (a / 8) * (1 + r())),
  };
  // 64 probes: 24 in the cluster, 16 elsewhere in the box, 12 on particles, 12 on cell centres
  const probes = { x: new Float64Array(64), y: new Float64Array(64), z: new Float64Array(64) };
  const centreCells: number[] = [];
  for (let k = 0; k < 64; k++) {
    let p: [number, number, number];
    if (k < 24) p = [0.5 + 0.1 * (r() - 0.5), 0.5 + 0.1 * (r() - 0.5), 0.5 + 0.1 * (r() - 0.5)];
    else if (k < 40) p = [r(), r(), r()];
    else if (k < 52) {
      const j = Math.floor(r() * np);
      p = [particles.x[j], particles.y[j], particles.z[j]];
    } else {
      const c = Math.floor(r() * cells.x.length);
      centreCells.push(c);
      p = [cells.x[c], cells.y[c], cells.z[c]];
    }
    [probes.x[k], probes.y[k], probes.z[k]] = p;
  }
  const box = { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] };

  const t0 = performance.now();
  const tree = await solver.solveSystem({ cells, particles, probes }, { box });
  const seconds = (performance.now() - t0) / 1000;
  const direct = await solver.solveSystem({ cells, particles, probes }, { box, method: 'direct' });

  // the float64 reference at the probes (a probe's pairs take the source's softening)
  const cellSources: SoftSources = { ...cells, eps: new Float64Array(cells.x.length) };
  const particleSources: SoftSources = { ...particles, eps: particles.softening };
  const ref = Array.from(probes.x, (_, k) =>
    softenedPotentialAt(kind, cellSources, G, probes.x[k], probes.y[k], probes.z[k]) +
    softenedPotentialAt(kind, particleSources, G, probes.x[k], probes.y[k], probes.z[k]));
  const pair = (phi: ArrayLike<number>, reference: ArrayLike<number>): ErrorPair => {
    const e = relativeErrorStats(phi, reference);
    return { max: e.maxRelError, mean: e.meanRelError };
  };
  const probeTreeError = pair(tree.probes!.potential, ref);
  const cellTreeError = pair(tree.cells!.potential, direct.cells!.potential);
  const particleTreeError = pair(tree.particles!.potential, direct.particles!.potential);

  // linearity: each part alone (the other's masses zero: the same trees, the same interaction lists)
  const zero = (n: number) => new Float64Array(n);
  const gasAlone = await solver.solveSystem({ cells, particles: { ...particles, mass: zero(np) }, probes }, { box });
  const starsAlone = await solver.solveSystem({ cells: { ...cells, mass: zero(cells.x.length) }, particles, probes }, { box });
  let scale = 0, gap = 0;
  for (const part of ['cells', 'particles', 'probes'] as const) {
    const b = tree[part]!.potential, g = gasAlone[part]!.potential, s = starsAlone[part]!.potential;
    for (let i = 0; i < b.length; i++) {
      scale = Math.max(scale, Math.abs(b[i]));
      gap = Math.max(gap, Math.abs(g[i] + s[i] - b[i]));
    }
  }

  // probes on cell centres: the cell's potential without its self term
  const c = selfCoefficient[selfPotentialModel(solver.options.selfPotential)];
  const centreGap = (res: SystemSolveResult) =>
    Math.max(
      ...centreCells.map((cell, k) => {
        const expected = res.cells!.potential[cell] + (c * G * cells.mass[cell]) / cells.size[cell];
        return Math.abs(res.probes!.potential[52 + k] - expected) / Math.abs(expected);
      }),
    );

  return {
    cells: cells.x.length,
    blocks: gas.mesh.leafBlocks().length,
    levels,
    particles: np,
    probes: 64,
    softening: kind,
    theta: solver.options.theta,
    backend: tree.stats.backend,
    probeTreeError,
    probeDirectError: pair(direct.probes!.potential, ref).max,
    cellTreeError,
    particleTreeError,
    probeErrorRatio: probeTreeError.max / Math.max(cellTreeError.max, particleTreeError.max),
    linearityGap: gap / scale,
    centreGapDirect: centreGap(direct),
    centreGapTree: centreGap(tree),
    seconds,
  };
}
