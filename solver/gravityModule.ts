/**
 * The gravity module of a hydro code: created once for a mesh (or a fixed cell layout), called every step with
 * the new density, finalised at the end. It keeps what a step can reuse: the solver (and through it the GPU
 * backend's device buffers and any periodic tables), the cell layout and the result arrays, and it counts the
 * time spent in gravity.
 *
 * ```ts
 * const gravity = GravityModule.init(mesh, { theta: 0.5, accelerations: true });
 * for (let step = 0; step < steps; step++) {
 *   hydroStep(mesh);
 *   const { stats } = await gravity.computePotential(mesh);   // writes gpot (and gacx, gacy, gacz)
 * }
 * gravity.finalize();
 * ```
 */
import { InvalidInputError } from './errors.js';
import { GravitySolver, type SolveResult, type SolveStats, type SystemSolveStats } from './gravitySolver.js';
import type { ParticleInput, PartResult, ProbeInput } from './system.js';
import type { SolverOptions } from './options.js';
import type { Box } from './cells.js';
import {
  AmrMesh,
  extractCells,
  finiteDifferenceAccelerations,
  meshBlocks,
  writeBack,
  type CellArrays,
  type MeshBlocks,
} from '../mesh/index.js';
import { rankChunk } from './mpi/decomposition.js';
import { mpiWorld } from './mpi/world.js';

export interface GravityModuleOptions extends SolverOptions {
  /** Mesh variable holding the density, g cm^-3. Default 'dens'. */
  densityVar?: string;
  /** Mesh variable that receives the potential, erg g^-1. Default 'gpot'. */
  potentialVar?: string;
  /** Mesh variables that receive the accelerations, cm s^-2. Default ['gacx', 'gacy', 'gacz']. */
  accelerationVars?: [string, string, string];
  /**
   * Mesh only: also write -grad(gpot) by finite differences (FLASH's cell-centred source term) into these
   * variables, e.g. ['gfdx', 'gfdy', 'gfdz']; mesh/gradient.ts says which to use when. Default none.
   */
  finiteDifferenceVars?: [string, string, string];
}

/** A fixed set of cells (centres and cube sides, cm) whose masses change from step to step. */
export interface CellLayout {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  /** Cube sides, cm, one per cell or one for all. */
  size: Float64Array | number;
  /** The domain the cells lie in (required for periodic boundaries). */
  box?: Box;
}

/** The state of a step: the mesh itself (its density variable is read), or the cell masses (g) of a layout. */
export type GravityState = AmrMesh | { mass: Float64Array };

export interface GravityStep {
  /** Potential at each cell, erg g^-1 (the module's array: overwritten by the next step). */
  potential: Float64Array;
  /** -grad(phi), cm s^-2, when accelerations were asked for (the module's arrays). */
  accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array };
  stats: SolveStats;
}

/** Totals over the module's life. */
export interface GravityTotals {
  calls: number;
  /** Wall time inside computePotential, s. */
  seconds: number;
  /** Native solve time, s (validation to results). */
  solveSeconds: number;
  cells: number;
}

export class GravityModule {
  private solver: GravitySolver | undefined;
  private readonly opts: GravityModuleOptions;
  private readonly layout: CellLayout | undefined;
  private mesh: AmrMesh | undefined;
  private meshCells: CellArrays | undefined;
  private meshLeaves: number[] = [];
  private meshBlocksValue: MeshBlocks | undefined;
  private out: { potential: Float64Array; accelerations: { x: Float64Array; y: Float64Array; z: Float64Array } } | undefined;
  private readonly sizes: Float64Array | undefined;
  private totalsValue: GravityTotals = { calls: 0, seconds: 0, solveSeconds: 0, cells: 0 };
  private lastStatsValue: SolveStats | undefined;

  private constructor(target: AmrMesh | CellLayout, options: GravityModuleOptions) {
    this.opts = { ...options };
    const { densityVar: _d, potentialVar: _p, accelerationVars: _a, finiteDifferenceVars: _f, ...solverOptions } = options;
    this.solver = new GravitySolver(solverOptions);
    if (target instanceof AmrMesh) {
      this.mesh = target;
    } else {
      const n = target.x.length;
      if (target.y.length !== n || target.z.length !== n)
        throw new InvalidInputError(`cell layout: x, y, z have ${n}, ${target.y.length}, ${target.z.length} elements`);
      if (typeof target.size !== 'number' && target.size.length !== n)
        throw new InvalidInputError(`cell layout: size has ${target.size.length} elements for ${n} cells`);
      this.layout = target;
      this.sizes = typeof target.size === 'number' ? new Float64Array(n).fill(target.size) : target.size;
      this.allocate(n);
    }
  }

  /**
   * A module for `target`: an AMR mesh (its leaf cells; refinement between steps is followed) or a fixed cell
   * layout. Options are the solver's ({@link SolverOptions}) plus the mesh variable names.
   */
  static init(target: AmrMesh | CellLayout, options: GravityModuleOptions = {}): GravityModule {
    return new GravityModule(target, options);
  }

  /** The solver's options as resolved (defaults filled in). */
  get options() {
    return this.live().options;
  }

  /** Statistics of the last step (undefined before the first). */
  get lastStats(): SolveStats | undefined {
    return this.lastStatsValue;
  }

  /** Totals over all steps so far. */
  get totals(): GravityTotals {
    return { ...this.totalsValue };
  }

  /**
   * The potential (and accelerations) of this step's mass distribution. For a mesh: reads the density variable of
   * its leaf cells, writes the potential (and accelerations) variables. For a layout: `state.mass` (g, one per
   * cell). The returned arrays belong to the module and are overwritten by the next step.
   */
  async computePotential(state: GravityState): Promise<GravityStep> {
    const solver = this.live();
    const t0 = performance.now();
    let r: SolveResult;
    if (state instanceof AmrMesh) {
      if (!this.mesh) throw new InvalidInputError('computePotential: this module was made for a cell layout; pass { mass }');
      if (state !== this.mesh) throw new InvalidInputError('computePotential: pass the mesh the module was made for');
      if (!solver.isDistributed) {
        // the block entry: the density read and the results written in place; the leaf blocks are made again only
        // when the mesh was refined, and an unchanged mesh keeps its tree natively (stats.treeReused)
        const { blocks, changed } = this.blocksOfMesh(state);
        r = await solver.solveMeshBlocks(
          state,
          blocks,
          { densityVar: this.opts.densityVar, potentialVar: this.opts.potentialVar, accelerationVars: this.opts.accelerationVars },
          this.out,
          changed,
        );
      } else {
        const cells = this.cellsOfMesh(state);
        const o = state.options;
        r = await solver.solveCells(cells, { box: { lo: [...o.domainLo], hi: [...o.domainHi] }, out: this.out });
        writeBack(state, this.opts.potentialVar ?? 'gpot', cells, r.potential);
        if (r.accelerations) {
          const [vx, vy, vz] = this.opts.accelerationVars ?? ['gacx', 'gacy', 'gacz'];
          writeBack(state, vx, cells, r.accelerations.x);
          writeBack(state, vy, cells, r.accelerations.y);
          writeBack(state, vz, cells, r.accelerations.z);
        }
      }
      if (this.opts.finiteDifferenceVars)
        finiteDifferenceAccelerations(state, this.opts.potentialVar ?? 'gpot', this.opts.finiteDifferenceVars);
    } else {
      const layout = this.layout;
      if (!layout) throw new InvalidInputError('computePotential: this module was made for a mesh; pass the mesh');
      if (!(state?.mass instanceof Float64Array) || state.mass.length !== layout.x.length) {
        throw new InvalidInputError(
          `computePotential: state.mass must be a Float64Array of ${layout.x.length} cell masses` +
            (state?.mass instanceof Float64Array ? ` (got ${state.mass.length})` : ''),
        );
      }
      r = await solver.solveCells(
        { x: layout.x, y: layout.y, z: layout.z, mass: state.mass, size: this.sizes! },
        { box: layout.box, out: this.out },
      );
    }
    const seconds = (performance.now() - t0) / 1e3;
    this.lastStatsValue = r.stats;
    this.totalsValue.calls += 1;
    this.totalsValue.seconds += seconds;
    this.totalsValue.solveSeconds += r.stats.seconds.total;
    this.totalsValue.cells += r.stats.cells;
    return { potential: r.potential, accelerations: r.accelerations, stats: r.stats };
  }

  /**
   * The field of this step's mass distribution at probes (any positions, cm): a coupled code's get-gravity-at-point.
   * The state is read as {@link computePotential} reads it (a mesh's density variable, or a layout's masses); nothing
   * is written into the mesh. Probes are targets only (no mass): see {@link SystemInput.probes} for what a probe on a
   * cell centre receives. Accelerations when the module computes them. Under mpirun each rank passes its own probes.
   * `particles` (optional; {@link SystemInput.particles}, the solver option `softening` is the kernel): softened
   * point masses that act as sources too (the probes then feel gas and particles); their own potential (and
   * accelerations: the force of the gas and of the other particles on each) comes back as `particles`. One process
   * and isolated boundaries only.
   * @throws InvalidInputError for bad probes (not finite, ...) or particles, the wrong state; the errors of
   *   computePotential.
   */
  async fieldAt(
    state: GravityState,
    probes: ProbeInput,
    particles?: ParticleInput,
  ): Promise<PartResult & { particles?: PartResult; stats: SystemSolveStats }> {
    const solver = this.live();
    let r;
    if (state instanceof AmrMesh) {
      if (!this.mesh) throw new InvalidInputError('fieldAt: this module was made for a cell layout; pass { mass }');
      if (state !== this.mesh) throw new InvalidInputError('fieldAt: pass the mesh the module was made for');
      const cells = this.cellsOfMesh(state);
      const o = state.options;
      r = await solver.solveSystem({ cells, particles, probes }, { box: { lo: [...o.domainLo], hi: [...o.domainHi] } });
    } else {
      const layout = this.layout;
      if (!layout) throw new InvalidInputError('fieldAt: this module was made for a mesh; pass the mesh');
      if (!(state?.mass instanceof Float64Array) || state.mass.length !== layout.x.length)
        throw new InvalidInputError(`fieldAt: state.mass must be a Float64Array of ${layout.x.length} cell masses`);
      r = await solver.solveSystem(
        { cells: { x: layout.x, y: layout.y, z: layout.z, mass: state.mass, size: this.sizes! }, particles, probes },
        { box: layout.box },
      );
    }
    return { ...r.probes!, ...(r.particles ? { particles: r.particles } : {}), stats: r.stats };
  }

  /** Releases the module's arrays and solver; later calls throw. */
  finalize(): void {
    this.solver = undefined;
    this.out = undefined;
    this.meshCells = undefined;
    this.meshBlocksValue = undefined;
    this.mesh = undefined;
  }

  private live(): GravitySolver {
    if (!this.solver) throw new InvalidInputError('the gravity module was finalised (finalize() was called)');
    return this.solver;
  }

  private allocate(n: number): void {
    this.out = {
      potential: new Float64Array(n),
      accelerations: { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n) },
    };
  }

  /** The mesh's leaf blocks for the block entry: made again (and the result arrays resized) only when they changed. */
  private blocksOfMesh(mesh: AmrMesh): { blocks: MeshBlocks; changed: boolean } {
    const leaves = mesh.leafBlocks();
    const prev = this.meshBlocksValue;
    if (prev && leaves.length === prev.leaves.length && leaves.every((b, i) => b === prev.leaves[i]))
      return { blocks: prev, changed: false };
    const blocks = meshBlocks(mesh);
    this.meshBlocksValue = blocks;
    const n = blocks.leaves.length * mesh.cellsPerBlock;
    if (!this.out || this.out.potential.length !== n) this.allocate(n);
    return { blocks, changed: true };
  }

  /**
   * The mesh's leaf cells (this rank's chunk of them in a distributed solve: Morton order, equal cell counts, as
   * GravitySolver.solve takes them): extracted again (and result arrays resized) only when the leaf blocks changed.
   */
  private cellsOfMesh(mesh: AmrMesh): CellArrays {
    const leaves = mesh.leafBlocks();
    const same =
      this.meshCells !== undefined &&
      leaves.length === this.meshLeaves.length &&
      leaves.every((b, i) => b === this.meshLeaves[i]);
    const densityVar = this.opts.densityVar ?? 'dens';
    if (!same) {
      const all = extractCells(mesh, densityVar);
      const { rank, size } = mpiWorld();
      this.meshCells = this.live().isDistributed ? rankChunk(all, all.count, mesh.cellsPerBlock, rank, size) : all;
      this.meshLeaves = leaves;
      if (!this.out || this.out.potential.length !== this.meshCells.count) this.allocate(this.meshCells.count);
      return this.meshCells;
    }
    // the same cells: only the masses change
    const cells = this.meshCells!;
    const dens = mesh.variable(densityVar);
    const cpb = mesh.cellsPerBlock;
    for (let p = 0; p < cells.count; p += cpb) {
      const b = cells.block[p];
      const [dx, dy, dz] = mesh.blockCellSize(b);
      const volume = dx * dy * dz; // as extractCells, so a step gives the same masses whichever path made them
      for (let q = p; q < p + cpb; q++) cells.mass[q] = dens[b * cpb + cells.cell[q]] * volume;
    }
    return cells;
  }
}
