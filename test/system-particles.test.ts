/**
 * Particles in the system solve (issue #18) against physics: a float64 softened direct sum written here (the spline
 * kernel of Monaghan & Lattanzio as Gadget writes it, radius 2.8 eps, and Plummer), method 'direct' against the same
 * sum, momentum exchanged between cells and particles, linearity (gas alone + particles alone = both), probes on
 * particles and on cell centres. CPU backend (the GPU is compared with it by the parity tools).
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { GravityModule } from '../solver/gravityModule.js';
import type { SofteningChoice } from '../solver/options.js';
import { clusteredCells, relErrors, rng, type Cells } from './helpers.js';

const G = 1;

interface Particles {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  softening: Float64Array;
}

/** n particles around two clumps in the unit cube, masses in [0.5, 1.5) / n, softening lengths in [eps, 3 eps). */
function clumpParticles(n: number, seed: number, eps: number): Particles {
  const r = rng(seed);
  const p: Particles = {
    x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n),
    mass: new Float64Array(n), softening: new Float64Array(n),
  };
  const centres = [[0.35, 0.5, 0.45], [0.6, 0.55, 0.6]];
  for (let i = 0; i < n; i++) {
    const c = centres[i % 2];
    const rad = 0.2 * r() ** 1.5;
    const u = 2 * r() - 1, ph = 2 * Math.PI * r(), s = Math.sqrt(1 - u * u);
    p.x[i] = c[0] + rad * s * Math.cos(ph);
    p.y[i] = c[1] + rad * s * Math.sin(ph);
    p.z[i] = c[2] + rad * u;
    p.mass[i] = (0.5 + r()) / n;
    p.softening[i] = eps * (1 + 2 * r());
  }
  return p;
}

/**
 * The softened kernel of a pair at distance r with softening eps (0: Newtonian, 0 at r = 0): [w, f] with potential
 * -G m w and acceleration -G m f d (d = target - source).
 */
function kernel(kind: SofteningChoice, r: number, eps: number): [number, number] {
  if (eps > 0 && kind === 'plummer') {
    const q = 1 / Math.sqrt(r * r + eps * eps);
    return [q, q * q * q];
  }
  const h = 2.8 * eps;
  if (r >= h) return r > 0 ? [1 / r, 1 / (r * r * r)] : [0, 0];
  const u = r / h;
  // Gadget's cubic-spline potential and force, as multiples of 1/h and 1/h^3
  if (u < 0.5) {
    return [(2.8 - (16 / 3) * u ** 2 + 9.6 * u ** 4 - 6.4 * u ** 5) / h, (32 / 3 - 38.4 * u ** 2 + 32 * u ** 3) / h ** 3];
  }
  return [
    (3.2 - 1 / (15 * u) - (32 / 3) * u ** 2 + 16 * u ** 3 - 9.6 * u ** 4 + (32 / 15) * u ** 5) / h,
    (64 / 3 - 48 * u + 38.4 * u ** 2 - (32 / 3) * u ** 3 - 1 / (15 * u ** 3)) / h ** 3,
  ];
}

interface Sources {
  x: ArrayLike<number>; y: ArrayLike<number>; z: ArrayLike<number>; mass: ArrayLike<number>; eps: ArrayLike<number>;
}

/** Potential and acceleration at (px, py, pz), target softening te, of all sources but `skip` (its own pair). */
function directAt(kind: SofteningChoice, s: Sources, px: number, py: number, pz: number, te: number, skip = -1) {
  let phi = 0, ax = 0, ay = 0, az = 0;
  for (let j = 0; j < s.x.length; j++) {
    if (j === skip) continue;
    const dx = px - s.x[j], dy = py - s.y[j], dz = pz - s.z[j];
    const [w, f] = kernel(kind, Math.sqrt(dx * dx + dy * dy + dz * dz), Math.max(te, s.eps[j]));
    phi -= G * s.mass[j] * w;
    ax -= G * s.mass[j] * f * dx;
    ay -= G * s.mass[j] * f * dy;
    az -= G * s.mass[j] * f * dz;
  }
  return { phi, ax, ay, az };
}

function particleSources(p: Particles): Sources {
  return { x: p.x, y: p.y, z: p.z, mass: p.mass, eps: p.softening };
}
function cellSources(c: Cells): Sources {
  return { x: c.x, y: c.y, z: c.z, mass: c.mass, eps: new Float64Array(c.x.length) };
}

/** Max |a - b| / max |b| over three-component vectors. */
function vectorError(a: { x: ArrayLike<number>; y: ArrayLike<number>; z: ArrayLike<number> }, ref: { ax: number; ay: number; az: number }[]) {
  let worst = 0, scale = 0;
  ref.forEach((v, i) => {
    worst = Math.max(worst, Math.hypot(a.x[i] - v.ax, a.y[i] - v.ay, a.z[i] - v.az));
    scale = Math.max(scale, Math.hypot(v.ax, v.ay, v.az));
  });
  return worst / scale;
}

const particles = clumpParticles(1500, 3, 0.004);

describe('particles alone against a float64 softened direct sum', () => {
  for (const softening of ['spline', 'plummer'] as const) {
    const ref = Array.from(particles.x, (_, i) =>
      directAt(softening, particleSources(particles), particles.x[i], particles.y[i], particles.z[i], particles.softening[i], i));

    it(`${softening}: the tree at theta 0.1 to 1e-6, method 'direct' to 1e-12`, async () => {
      const solver = new GravitySolver({ backend: 'cpu', G, theta: 0.1, softening, accelerations: true });
      const tree = await solver.solveSystem({ particles });
      const direct = await solver.solveSystem({ particles }, { method: 'direct' });
      const phiRef = ref.map((v) => v.phi);
      const treeErr = relErrors(tree.particles!.potential, phiRef).max;
      expect(treeErr).toBeGreaterThan(0); // the tree approximates some nodes
      expect(treeErr).toBeLessThan(1e-6);
      expect(vectorError(tree.particles!.accelerations!, ref)).toBeLessThan(1e-6);
      expect(relErrors(direct.particles!.potential, phiRef).max).toBeLessThan(1e-12);
      expect(vectorError(direct.particles!.accelerations!, ref)).toBeLessThan(1e-12);
      const s = tree.stats.system;
      expect(s.particles).toBe(1500);
      expect(s.particleGroups).toBeGreaterThan(1);
      expect(s.particleNodes).toBeGreaterThan(1);
      expect(s.particleApproxInteractions).toBeGreaterThan(0);
      expect(s.particleDirectInteractions).toBeGreaterThan(0);
      expect(tree.cells).toBeUndefined();
      expect(tree.probes).toBeUndefined();
    });
  }

  it('one softening for all is the same as that value per particle, bitwise', async () => {
    const solver = new GravitySolver({ backend: 'cpu', G });
    const one = { ...particles, softening: 0.01 };
    const each = { ...particles, softening: new Float64Array(1500).fill(0.01) };
    const a = await solver.solveSystem({ particles: one });
    const b = await solver.solveSystem({ particles: each });
    expect(Array.from(a.particles!.potential)).toEqual(Array.from(b.particles!.potential));
    // number[] inputs are converted, not refused
    const c = await solver.solveSystem({
      particles: { x: Array.from(particles.x), y: Array.from(particles.y), z: Array.from(particles.z), mass: Array.from(particles.mass), softening: 0.01 },
    });
    expect(Array.from(c.particles!.potential)).toEqual(Array.from(a.particles!.potential));
  });
});

describe('cells and particles together', () => {
  const cells = clusteredCells(3000, 7);
  const few = clumpParticles(400, 9, 0.006);
  const massless = <T extends { mass: Float64Array }>(v: T): T => ({ ...v, mass: new Float64Array(v.mass.length) });

  it("method 'direct': cells and particles at cells, particles and probes against the sum written here", async () => {
    for (const softening of ['spline', 'plummer'] as const) {
      const solver = new GravitySolver({ backend: 'cpu', G, softening, selfPotential: 'none' });
      const probes = { x: [0.5, 0.31, 2.0, few.x[5]], y: [0.5, 0.47, -1.0, few.y[5]], z: [0.5, 0.52, 0.3, few.z[5]] };
      const r = await solver.solveSystem({ cells, particles: few, probes }, { method: 'direct' });
      const at = (x: number, y: number, z: number, te: number, skipCell: number, skipParticle: number) =>
        directAt(softening, cellSources(cells), x, y, z, te, skipCell).phi +
        directAt(softening, particleSources(few), x, y, z, te, skipParticle).phi;
      const cellRef = Array.from({ length: 50 }, (_, k) => at(cells.x[60 * k], cells.y[60 * k], cells.z[60 * k], 0, 60 * k, -1));
      expect(relErrors(Array.from({ length: 50 }, (_, k) => r.cells!.potential[60 * k]), cellRef).max).toBeLessThan(1e-12);
      const partRef = Array.from(few.x, (_, i) => at(few.x[i], few.y[i], few.z[i], few.softening[i], -1, i));
      expect(relErrors(r.particles!.potential, partRef).max).toBeLessThan(1e-12);
      const probeRef = probes.x.map((_, k) => at(probes.x[k], probes.y[k], probes.z[k], 0, -1, -1));
      expect(relErrors(r.probes!.potential, probeRef).max).toBeLessThan(1e-12);
    }
  });

  it('momentum: the cells pull the particles as hard as the particles pull the cells (direct: rounding, tree: its error)', async () => {
    for (const method of ['direct', 'tree'] as const) {
      const solver = new GravitySolver({ backend: 'cpu', G, accelerations: true, selfPotential: 'none' });
      // the cells' field at the particles (the particles massless), and the particles' at the cells
      const byCells = await solver.solveSystem({ cells, particles: massless(few) }, { method });
      const byParticles = await solver.solveSystem({ cells: massless(cells), particles: few }, { method });
      const onParticles = [0, 0, 0], onCells = [0, 0, 0];
      const a1 = byCells.particles!.accelerations!, a2 = byParticles.cells!.accelerations!;
      for (let i = 0; i < few.x.length; i++) {
        onParticles[0] += few.mass[i] * a1.x[i];
        onParticles[1] += few.mass[i] * a1.y[i];
        onParticles[2] += few.mass[i] * a1.z[i];
      }
      for (let i = 0; i < cells.x.length; i++) {
        onCells[0] += cells.mass[i] * a2.x[i];
        onCells[1] += cells.mass[i] * a2.y[i];
        onCells[2] += cells.mass[i] * a2.z[i];
      }
      const scale = Math.hypot(...onParticles);
      expect(scale).toBeGreaterThan(0);
      const gap = Math.hypot(onParticles[0] + onCells[0], onParticles[1] + onCells[1], onParticles[2] + onCells[2]) / scale;
      expect(gap).toBeLessThan(method === 'direct' ? 1e-12 : 1e-3);
    }
  });

  it('linearity: gas alone + particles alone = both, at cells, particles and probes, to rounding', async () => {
    const probes = { x: [0.2, 0.5, 0.9, 3], y: [0.4, 0.5, 0.1, 0], z: [0.5, 0.55, 0.7, -2] };
    for (const softening of ['spline', 'plummer'] as const) {
      const solver = new GravitySolver({ backend: 'cpu', G, softening, accelerations: true });
      const both = await solver.solveSystem({ cells, particles: few, probes });
      const gas = await solver.solveSystem({ cells, particles: massless(few), probes });
      const stars = await solver.solveSystem({ cells: massless(cells), particles: few, probes });
      for (const part of ['cells', 'particles', 'probes'] as const) {
        const b = both[part]!, g = gas[part]!, s = stars[part]!;
        let scale = 0, worst = 0;
        for (let i = 0; i < b.potential.length; i++) {
          scale = Math.max(scale, Math.abs(b.potential[i]));
          worst = Math.max(worst, Math.abs(g.potential[i] + s.potential[i] - b.potential[i]));
        }
        expect(worst / scale, `${softening} ${part}`).toBeLessThan(1e-13);
        const ab = b.accelerations!, ag = g.accelerations!, as = s.accelerations!;
        let aScale = 0, aWorst = 0;
        for (let i = 0; i < b.potential.length; i++) {
          aScale = Math.max(aScale, Math.hypot(ab.x[i], ab.y[i], ab.z[i]));
          aWorst = Math.max(aWorst, Math.hypot(ag.x[i] + as.x[i] - ab.x[i], ag.y[i] + as.y[i] - ab.y[i], ag.z[i] + as.z[i] - ab.z[i]));
        }
        expect(aWorst / aScale, `${softening} ${part} accelerations`).toBeLessThan(1e-12);
      }
    }
  });

  // A probe has softening 0, so it meets particle j with eps_j where particle i meets it with max(eps_i, eps_j), and
  // meets the cells unsoftened: with one softening for all particles and no cells it differs from particle i by
  // particle i's own pair alone, G m / eps.
  it("a probe on a particle (one softening, particles alone) is that particle's potential minus G m / eps", async () => {
    const picks = [0, 17, 399];
    const same = { ...few, softening: 0.006 };
    const probes = { x: picks.map((i) => few.x[i]), y: picks.map((i) => few.y[i]), z: picks.map((i) => few.z[i]) };
    for (const softening of ['spline', 'plummer'] as const) {
      for (const [method, tol] of [['direct', 1e-13], ['tree', 1e-6]] as const) {
        const solver = new GravitySolver({ backend: 'cpu', G, softening, theta: 0.05 });
        const r = await solver.solveSystem({ particles: same, probes }, { method });
        picks.forEach((i, k) => {
          const expected = r.particles!.potential[i] - G * few.mass[i] / 0.006;
          expect(Math.abs(r.probes!.potential[k] - expected) / Math.abs(expected), `${softening} ${method} particle ${i}`).toBeLessThan(tol);
        });
      }
    }
  });

  it("a probe on a cell centre (cells and particles) is the cell's potential without its self term", async () => {
    const cellPicks = [3, 1500, 2999];
    const probes = { x: cellPicks.map((i) => cells.x[i]), y: cellPicks.map((i) => cells.y[i]), z: cellPicks.map((i) => cells.z[i]) };
    const c = 2.83729747948062; // the default 'lattice' self term's coefficient
    for (const softening of ['spline', 'plummer'] as const) {
      for (const [method, tol] of [['direct', 1e-13], ['tree', 1e-6]] as const) {
        const solver = new GravitySolver({ backend: 'cpu', G, softening, theta: 0.05 });
        const r = await solver.solveSystem({ cells, particles: few, probes }, { method });
        cellPicks.forEach((i, k) => {
          const expected = r.cells!.potential[i] + c * G * cells.mass[i] / cells.size[i];
          expect(Math.abs(r.probes!.potential[k] - expected) / Math.abs(expected), `${softening} ${method} cell ${i}`).toBeLessThan(tol);
        });
      }
    }
  });

  it('GravityModule.fieldAt passes particles: the probes feel them, their own results come back', async () => {
    const layout = { x: cells.x, y: cells.y, z: cells.z, size: cells.size };
    const mod = GravityModule.init(layout, { backend: 'cpu', G, selfPotential: 'none' });
    const probes = { x: [0.5], y: [0.5], z: [0.5] };
    const withP = await mod.fieldAt({ mass: cells.mass }, probes, few);
    const without = await mod.fieldAt({ mass: cells.mass }, probes);
    const ref = directAt('spline', particleSources(few), 0.5, 0.5, 0.5, 0).phi;
    expect(Math.abs(withP.potential[0] - without.potential[0] - ref) / Math.abs(ref)).toBeLessThan(1e-3);
    expect(withP.particles!.potential.length).toBe(400);
    expect(without.particles).toBeUndefined();
  });
});
