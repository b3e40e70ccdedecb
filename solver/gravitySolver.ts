/**
 * GravitySolver: the public entry. Resolves options once, asks the native backend policy (native/api/session.h)
 * what runs, and runs solves on plain cell arrays or on an AMR mesh (writing the potential, and accelerations if
 * asked, back into block variables).
 */
import { InvalidInputError, InvalidOptionError, NoDeviceError, fromNativeError } from './errors.js';
import { periodicAxes, resolveOptions, selfPotentialModel, type ResolvedOptions, type SolverOptions } from './options.js';
import { toNativeCells, type Box, type CellInput } from './cells.js';
import {
  systemCells,
  toNativeParticles,
  toNativeProbes,
  toNativeTargets,
  type PartResult,
  type SystemInput,
  type SystemSolveOptions,
} from './system.js';
import {
  loadNative,
  type NativeAddon,
  type NativeBlocks,
  type NativeDistributedStats,
  type NativeOptions,
  type NativeOutputs,
  type NativeResult,
  type NativeStats,
  type NativeSystemStats,
} from './native.js';
import { extractCells, leafValues, meshBlocks, writeBack, type AmrMesh, type MeshBlocks } from '../mesh/index.js';
import { failDistributedSolve, mpiWorld } from './mpi/world.js';
import { rankChunk } from './mpi/decomposition.js';

/** Per-solve statistics. Times in seconds. */
export interface SolveStats {
  backend: 'cpu' | 'cuda';
  /** Why this backend was chosen, e.g. "auto: no CUDA backend in this build". */
  backendReason: string;
  /**
   * What computed the result: 'tree' (the Barnes-Hut walk), 'fmm' (the fast multipole method; its interactions
   * per cell are then M2L node-node interactions (approx) and P2P cell pairs (direct)) or 'direct' (summation).
   */
  method: 'tree' | 'fmm' | 'direct';
  cells: number;
  threads: number;
  /**
   * upload/download: host <-> device copies (0 on the CPU). Each phase is its own wall time and they may overlap
   * (the CUDA block entry uploads a new mesh's densities beside keys/sort/build, and downloads the results chunk by
   * chunk beside the walk), so the phases need not add up to total.
   */
  seconds: { upload: number; keysAndSort: number; build: number; moments: number; walk: number; download: number; total: number };
  /** Device memory held per cell after the solve (0 on the CPU). */
  deviceBytesPerCell: number;
  /** Node-cell (multipole) interactions per cell. */
  approxInteractionsPerCell: number;
  /** Cell-cell interactions per cell. */
  directInteractionsPerCell: number;
  interactionsPerCell: number;
  cellsPerSecond: number;
  nodes: number;
  leaves: number;
  groups: number;
  treeDepth: number;
  /** MPI ranks that took part in the solve (1 unless distributed). */
  ranks: number;
  /** This rank's share of a distributed solve: LET bytes, exchange and overlap times (absent otherwise). */
  distributed?: NativeDistributedStats;
  /**
   * Periodic solves: where the Ewald table came from and how long getting it took (s); 'none' when isolated.
   * cacheWarning: set when this solve built the table and could not cache it on disk (every new process then
   * builds it again; set AMRGRAV_CACHE_DIR to a writable directory).
   */
  ewaldTable: { source: 'none' | 'memory' | 'disk' | 'built'; seconds: number; cacheWarning?: string };
  /** Fully periodic boxes: whether the sources were the density contrast (option densityContrast). */
  densityContrast: boolean;
  /** The mean density removed, M / V_box (g cm^-3); 0 without the contrast. */
  meanDensity: number;
  /**
   * Fully periodic boxes: the volume-weighted mean of the potential over the cells, sum h^3 phi / sum h^3 (erg/g;
   * all ranks' cells): zero to rounding on uniform grids with the contrast (the check a hydro code's energy
   * diagnostic needs). 0 for other boxes.
   */
  meanPotential: number;
  /**
   * A block solve ({@link GravitySolver.solveBlocks}, and {@link GravitySolver.solve} on a mesh) kept the keys,
   * order, tree topology and groups of the previous block solve on this solver's backend: the mesh was unchanged and
   * only what depends on the masses was computed. false for cell solves.
   */
  treeReused: boolean;
}

/**
 * Leaf blocks for {@link GravitySolver.solveBlocks} (native/core/blocks.h; the C API's amrgrav_blocks): cell
 * (i, j, k) of block b has centre lo + (i + 0.5) dx on each axis, size dx (cells are cubes: dy, dz equal dx within
 * 1e-12), mass density x (dx dy dz). The density is read, and the results written, in place: the element of cell
 * (i, j, k) of the block stored at slot s (blockIndex[b], else b) is
 * s * blockStride + varStride * (((k + g) * NY + (j + g)) * NX + i + g), NX = nxb + 2 g (likewise NY, NZ).
 */
export type BlockInput = NativeBlocks;

export interface BlockSolveOptions {
  /** As {@link CellSolveOptions.box}: cells must lie in it; required with periodic boundaries. */
  box?: Box;
  /**
   * The arrays the results are written into, in the density's layout and type (guard cells and other slots are not
   * written); accelerations when the solver computes them.
   */
  out: {
    potential: Float64Array | Float32Array;
    accelerations?: { x: Float64Array | Float32Array; y: Float64Array | Float32Array; z: Float64Array | Float32Array };
  };
}

export interface SolveResult {
  /** Potential at each cell centre, erg g^-1 (negative), in the input order. */
  potential: Float64Array;
  /** -grad(phi) at each cell centre, cm s^-2, when `accelerations` was set. */
  accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array };
  stats: SolveStats;
}

/** Statistics of a system solve: the cells' (cells = the cells computed), the particles' and the probes'. */
export interface SystemSolveStats extends SolveStats {
  /**
   * targets: cells computed; targetGroups: cell walk groups walked (of stats.groups: fewer with a subset; 0 for
   * 'direct'); probes, probeGroups, the probes' interactions and seconds (CPU: sort, walk, finish; GPU: walk, finish);
   * particles, particleGroups, particleNodes (the particles' tree), particleApproxInteractions and
   * particleDirectInteractions (node and point interactions of the softened walks: the particles against both
   * trees, the cells and probes against the particles' tree, summed over targets), secondsParticles (the particles'
   * tree, walks and finish).
   */
  system: NativeSystemStats;
}

/** What {@link GravitySolver.solveSystem} returns: a part for each kind given, in its input order. */
export interface SystemSolveResult {
  /** One per cell, or per target in the targets' order. */
  cells?: PartResult;
  /** One per particle, in their order. */
  particles?: PartResult;
  /** One per probe. */
  probes?: PartResult;
  stats: SystemSolveStats;
}

export interface CellSolveOptions {
  /**
   * Cells must lie in this box (an error otherwise); the tree's root cube starts at its lower corner. Required
   * with periodic boundaries: its sides are the periods.
   */
  box?: Box;
  /**
   * Arrays that receive the results (Float64Array, one element per cell; `accelerations` only when the solver
   * computes them). A hydro code that passes the same arrays every step avoids allocating and copying the results;
   * the returned result then holds these arrays. Default: new arrays.
   */
  out?: { potential: Float64Array; accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array } };
}

export interface MeshSolveOptions {
  /** Block variable holding the density, g cm^-3. Default 'dens'. */
  densityVar?: string;
  /** Block variable that receives the potential, erg g^-1. Default 'gpot'. */
  potentialVar?: string;
  /** Block variables that receive the accelerations (cm s^-2) when `accelerations` is on. Default gacx, gacy, gacz. */
  accelerationVars?: [string, string, string];
}

let warnedFallback = false;

/**
 * The CUDA probe's reason in a user's words (stats.backendReason keeps the runtime's own), as the native backend
 * policy words it (native/api/session.h gpuReasonInWords). CUDA's runtime says "CUDA driver version is
 * insufficient" both when no NVIDIA driver is installed and when it is too old for the runtime; on a machine
 * without a GPU that reads as a broken install, so it is said plainly.
 * @private exported for the tests
 */
export function fallbackReason(cudaReason: string): string {
  return loadNative().gpuReasonInWords(cudaReason);
}

/** The caller's result arrays as the addon takes them (lengths are checked natively, against the cell count). */
function toNativeOutputs(out: NonNullable<CellSolveOptions['out']>, accelerations: boolean): NativeOutputs {
  if (!(out.potential instanceof Float64Array)) throw new InvalidInputError('out.potential must be a Float64Array');
  if (!accelerations) return { potential: out.potential };
  const a = out.accelerations;
  if (!a || !(a.x instanceof Float64Array) || !(a.y instanceof Float64Array) || !(a.z instanceof Float64Array)) {
    throw new InvalidInputError('out.accelerations must be {x, y, z} Float64Arrays when accelerations are computed');
  }
  return { potential: out.potential, ax: a.x, ay: a.y, az: a.z };
}

/**
 * Bad input found on this rank before a collective solve: the other ranks are already in the solve, so they are told
 * (failDistributedSolve) and every rank fails alike. Returns the error to throw: this rank's own, or the agreed one
 * when telling the others fails.
 */
async function rejectedOnEveryRank(err: unknown, callerStack: string | undefined, context: string): Promise<unknown> {
  const e = err as { code?: string; message: string };
  try {
    await failDistributedSolve(e.code ?? 'INVALID_INPUT', e.message);
  } catch (agreed) {
    return fromNativeError(agreed, callerStack, context);
  }
  return err;
}

export class GravitySolver {
  readonly options: ResolvedOptions;
  private readonly native: NativeAddon;
  /** Tree solves are collectives over the MPI world (option `distributed` under mpirun with several ranks). */
  private readonly distributed: boolean;

  /** True when tree solves are collectives over several MPI ranks (each rank passes its own cells). */
  get isDistributed(): boolean {
    return this.distributed;
  }
  private readonly periodic: [boolean, boolean, boolean];

  /**
   * @param options see {@link SolverOptions}; defaults: theta 0.5, order 2, G 6.674e-8 (cgs), backend 'auto'.
   * @throws InvalidOptionError for a bad option; NoDeviceError for backend 'cuda' without a CUDA build or GPU;
   *   NativeLoadError when the addon is missing.
   * @example
   * const solver = new GravitySolver({ theta: 0.5 });
   * const { potential } = await solver.solveCells({ x, y, z, mass, size });
   */
  constructor(options: SolverOptions = {}) {
    this.options = resolveOptions(options);
    this.periodic = periodicAxes(this.options.boundary);
    this.native = loadNative();
    this.distributed = this.options.distributed !== false && mpiWorld().size > 1;
    // The backend policy is native (native/api/session.h): 'cuda' without a usable GPU fails here (not when
    // distributed: a rank without a GPU fails inside the collective solve, with every rank); 'auto' says once why
    // the CPU runs when CUDA was built but cannot be used. Each solve passes the choice through and reports what ran.
    const choice = this.native.backendPolicy(this.options.backend, this.distributed);
    if (choice.error) throw new NoDeviceError(choice.error);
    if (choice.notice && !warnedFallback) {
      warnedFallback = true; // once per process: a hydro code constructs solvers often
      process.stderr.write(`${choice.notice}\n`);
    }
  }

  /**
   * Solves on the leaf cells of an AMR mesh (mass = density x cell volume) and writes the potential, and the
   * accelerations if asked, into block variables (created if missing). The density variable is not modified.
   * In a distributed solve every rank holds the same mesh and takes its chunk of the leaf blocks (Morton order,
   * equal cell counts); each rank writes back the blocks of its own chunk only.
   * @throws MeshError for an unknown density variable or non-cubic cells; the errors of {@link solveCells}.
   */
  async solve(mesh: AmrMesh, opts: MeshSolveOptions = {}): Promise<SolveResult> {
    if (!this.distributed) return this.solveMeshBlocks(mesh, meshBlocks(mesh), opts);
    const all = extractCells(mesh, opts.densityVar ?? 'dens');
    const { rank, size } = mpiWorld();
    const cells = this.distributed ? rankChunk(all, all.count, mesh.cellsPerBlock, rank, size) : all;
    const o = mesh.options;
    const r = await this.solveCells(cells, { box: { lo: [...o.domainLo], hi: [...o.domainHi] } });
    writeBack(mesh, opts.potentialVar ?? 'gpot', cells, r.potential);
    if (r.accelerations) {
      const [vx, vy, vz] = opts.accelerationVars ?? ['gacx', 'gacy', 'gacz'];
      writeBack(mesh, vx, cells, r.accelerations.x);
      writeBack(mesh, vy, cells, r.accelerations.y);
      writeBack(mesh, vz, cells, r.accelerations.z);
    }
    return r;
  }

  /**
   * The mesh's leaf blocks through the block entry (what {@link solve} does outside a distributed solve): the density
   * variable is read in place and the potential (and accelerations) written in place into their variables (created
   * if missing); the result's arrays are their values at the leaf cells in {@link extractCells} order, into `into`
   * when given. The cells are extractCells' (same formula, same order), so the result is bitwise the cell path's.
   * @internal GravityModule passes the leaf blocks it keeps between steps.
   */
  async solveMeshBlocks(
    mesh: AmrMesh,
    blocks: MeshBlocks,
    opts: MeshSolveOptions = {},
    into?: { potential: Float64Array; accelerations: { x: Float64Array; y: Float64Array; z: Float64Array } },
    meshChanged = false,
  ): Promise<SolveResult> {
    mesh.variable(opts.densityVar ?? 'dens'); // an unknown density variable fails before anything is added
    const potVar = opts.potentialVar ?? 'gpot';
    const accVars = opts.accelerationVars ?? ['gacx', 'gacy', 'gacz'];
    mesh.addVariable(potVar);
    if (this.options.accelerations) for (const v of accVars) mesh.addVariable(v);
    const density = mesh.variable(opts.densityVar ?? 'dens');
    const potential = mesh.variable(potVar);
    const acc = this.options.accelerations
      ? { x: mesh.variable(accVars[0]), y: mesh.variable(accVars[1]), z: mesh.variable(accVars[2]) }
      : undefined;
    const o = mesh.options;
    const { nxb, nyb, nzb } = o;
    const { stats } = await this.solveBlocks(
      { nxb, nyb, nzb, lo: blocks.lo, dx: blocks.dx, blockIndex: blocks.blockIndex, density, meshChanged },
      { box: { lo: [...o.domainLo], hi: [...o.domainHi] }, out: { potential, ...(acc ? { accelerations: acc } : {}) } },
    );
    const result: SolveResult = { potential: leafValues(mesh, potential, blocks.leaves, into?.potential), stats };
    if (acc)
      result.accelerations = {
        x: leafValues(mesh, acc.x, blocks.leaves, into?.accelerations.x),
        y: leafValues(mesh, acc.y, blocks.leaves, into?.accelerations.y),
        z: leafValues(mesh, acc.z, blocks.leaves, into?.accelerations.z),
      };
    return result;
  }

  /**
   * The block entry: the potential (and accelerations) of the leaf blocks' cells, written into `opts.out` in the
   * density's layout and type (Float64Array or Float32Array density; float32 results are the double results
   * rounded). The cells are made natively from the blocks (on the GPU: only the density crosses PCIe), and on an
   * unchanged mesh the tree of the previous block solve is kept (stats.treeReused; the geometry is compared, or
   * `blocks.meshChanged` says it changed). Bitwise the result of {@link solveCells} on the same cells in block order.
   * Under mpirun (option `distributed`) a collective: each rank passes its own blocks.
   * @throws InvalidInputError naming the block (and cell) for bad geometry or density, short arrays;
   *   InvalidOptionError for periodic boundaries without `box`.
   */
  async solveBlocks(blocks: BlockInput, opts: BlockSolveOptions): Promise<{ stats: SolveStats }> {
    const callerStack = new Error().stack;
    if (this.periodic.some((p) => p) && !opts.box) {
      throw new InvalidOptionError(
        "option 'boundary': periodic boundaries need the box (its sides are the periods): pass solveBlocks(blocks, { box, out })",
      );
    }
    const a = opts.out?.accelerations;
    const out = { potential: opts.out?.potential, ...(a ? { ax: a.x, ay: a.y, az: a.z } : {}) };
    let r;
    try {
      r = await this.native.solveBlocks(blocks, this.nativeOptions(this.distributed, opts.box), out as Parameters<NativeAddon['solveBlocks']>[2]);
    } catch (err) {
      throw fromNativeError(err, callerStack, this.solveLabel());
    }
    if (r.warning) process.emitWarning(r.warning);
    const nb = blocks.lo.length / 3;
    return { stats: this.toStats(this.options.method, nb * blocks.nxb * blocks.nyb * blocks.nzb, r.stats) };
  }

  /**
   * Tree solve on plain cell arrays. Zero cells is valid and returns empty arrays. Under mpirun (option
   * `distributed`, default on) this is a collective: every rank calls it with its own cells (any number, zero
   * included) and gets, at those cells, the potential of all ranks' cells. Bad input on one rank makes it throw on
   * every rank, with that rank's message.
   * @throws InvalidOptionError for periodic boundaries without `box`; InvalidInputError for cells outside the box.
   */
  async solveCells(cells: CellInput, opts: CellSolveOptions = {}): Promise<SolveResult> {
    return this.run('tree', cells, opts);
  }

  /**
   * O(N^2) direct summation with the same self term: the reference the tree is measured against. Never
   * distributed: under mpirun each rank sums over the cells it passes.
   */
  async directCells(cells: CellInput, opts: CellSolveOptions = {}): Promise<SolveResult> {
    return this.run('direct', cells, opts);
  }

  /**
   * One solve over several kinds of points: `cells` (sources and targets, as {@link solveCells}), `particles`
   * (softened point masses, sources and targets: {@link ParticleInput}, the kernel is the option `softening`) and
   * `probes` (targets only, any position: the field of the cells and particles there, e.g. a coupled code's
   * get-gravity-at-point), optionally only a subset of the cells (`opts.targets`, bitwise the full solve's values
   * there, at a cost that falls with the subset). Every part is optional; each comes back in its input order. CPU
   * and CUDA walk the probes in their own groups (sorted by the same Morton keys, up to groupSize per group) against
   * the cells' tree with the same acceptance rule and kernels. The particles form a tree of their own, which the
   * cells, particles and probes all walk with the box MAC plus a softening rule (option `walk` 'vote' applies to the
   * cells' tree only). Under mpirun (option `distributed`) a collective: each rank passes its own cells, particles,
   * probes and targets (indices into its own cells; CPU and GPU ranks); the particles are gathered whole on every
   * rank.
   * @example
   * const solver = new GravitySolver({ softening: 'spline' });
   * const r = await solver.solveSystem({ cells, particles: { x: [0.5], y: [0.5], z: [0.5], mass: [1e30], softening: 1e-3 } });
   * r.particles!.potential[0]; // the cells' potential at the particle (softened by its 1e-3 cm)
   * @throws InvalidInputError for bad probes (not finite; outside the box along an isolated axis of a periodic box),
   *   particles (arrays of other lengths or types; not finite, negative mass, softening not > 0, outside the box) or
   *   targets (not an integer index below the cell count, repeated), and the errors of {@link solveCells};
   *   InvalidOptionError for periodic boundaries without `box`, 'direct' in a periodic box, and particles where
   *   they are not supported yet (periodic boundaries).
   * @example
   * const r = await solver.solveSystem({ cells, probes: { x: [0.5], y: [0.5], z: [2] } }, { targets: [0, 7] });
   * r.probes!.potential[0]; // the cells' potential at (0.5, 0.5, 2)
   * r.cells!.potential;     // two values: cells 0 and 7
   */
  async solveSystem(system: SystemInput, opts: SystemSolveOptions = {}): Promise<SystemSolveResult> {
    const callerStack = new Error().stack;
    const method = opts.method ?? 'tree';
    const distributed = this.distributed && method === 'tree';
    let native: Parameters<NativeAddon['solveSystem']>[0];
    try {
      if (method !== 'tree' && method !== 'direct')
        throw new InvalidOptionError(`solveSystem: method must be 'tree' or 'direct', got ${String(method)}`);
      if (this.periodic.some((p) => p) && !opts.box) {
        throw new InvalidOptionError(
          "option 'boundary': periodic boundaries need the box (its sides are the periods): pass solveSystem(system, { box })",
        );
      }
      if (system === null || typeof system !== 'object')
        throw new InvalidInputError('system must be an object {cells?, particles?, probes?}');
      const cells = systemCells(system);
      native = { cells };
      // values, periodic boxes and distributed solves are checked natively (the latter inside the collective)
      if (system.particles !== undefined) native.particles = toNativeParticles(system.particles);
      if (system.probes !== undefined) native.probes = toNativeProbes(system.probes);
      if (opts.targets !== undefined) native.targets = toNativeTargets(opts.targets, cells.x.length);
    } catch (err) {
      throw distributed ? await rejectedOnEveryRank(err, callerStack, 'system solve') : err;
    }
    let r;
    try {
      r = await this.native.solveSystem(native, this.nativeOptions(distributed, opts.box), method);
    } catch (err) {
      throw fromNativeError(err, callerStack, method === 'tree' ? 'system solve' : 'system direct summation');
    }
    if (r.warning) process.emitWarning(r.warning);
    const part = (o: { potential: Float64Array; ax?: Float64Array; ay?: Float64Array; az?: Float64Array }): PartResult =>
      o.ax && o.ay && o.az ? { potential: o.potential, accelerations: { x: o.ax, y: o.ay, z: o.az } } : { potential: o.potential };
    const result: SystemSolveResult = {
      stats: { ...this.toStats(method, r.stats.system.targets, r.stats), system: r.stats.system },
    };
    if (system.cells !== undefined) result.cells = part(r.cells);
    if (system.particles !== undefined) result.particles = part(r.particles);
    if (system.probes !== undefined) result.probes = part(r.probes);
    return result;
  }

  private async run(method: 'tree' | 'direct', cells: CellInput, opts: CellSolveOptions): Promise<SolveResult> {
    const callerStack = new Error().stack;
    const distributed = this.distributed && method === 'tree';
    if (this.periodic.some((p) => p) && !opts.box) {
      throw new InvalidOptionError(
        "option 'boundary': periodic boundaries need the box (its sides are the periods): pass solveCells(cells, { box })",
      );
    }
    const o = this.options;
    let nc: ReturnType<typeof toNativeCells>;
    let out: NativeOutputs | undefined;
    try {
      nc = toNativeCells(cells);
      out = opts.out ? toNativeOutputs(opts.out, o.accelerations) : undefined;
      // checked natively too, but there a rejection would leave the other ranks in the collective
      if (distributed && out) {
        for (const [k, v] of Object.entries(out) as [string, Float64Array][])
          if (v.length !== nc.x.length) throw new InvalidInputError(`out.${k} has ${v.length} elements, expected ${nc.x.length} (one per cell)`);
      }
    } catch (err) {
      throw distributed ? await rejectedOnEveryRank(err, callerStack, this.solveLabel()) : err;
    }
    const nopts = this.nativeOptions(distributed, opts.box);
    let r: NativeResult;
    try {
      // the native policy picks the backend; 'auto' falls back to the CPU when the GPU has too little memory for
      // this input (never in a distributed solve: the other ranks would not follow), and says so in r.warning
      r = await (method === 'tree' ? this.native.solve(nc, nopts, out) : this.native.direct(nc, nopts, out));
    } catch (err) {
      throw fromNativeError(err, callerStack, method === 'tree' ? this.solveLabel() : 'direct summation');
    }
    if (r.warning) process.emitWarning(r.warning);
    return this.toResult(method === 'tree' ? o.method : method, nc.x.length, r);
  }

  /** The far-field solve named by its method in error messages ('tree solve', 'FMM solve'). */
  private solveLabel(): string {
    return this.options.method === 'fmm' ? 'FMM solve' : 'tree solve';
  }

  private nativeOptions(distributed: boolean, box: Box | undefined): NativeOptions {
    const o = this.options;
    return {
      backend: o.backend,
      method: o.method,
      fmmOrder: o.fmmOrder,
      fmmTheta: o.fmmTheta,
      fmmTolerance: o.fmmTolerance,
      fmmAccelTolerance: o.fmmAccelTolerance,
      theta: o.theta,
      order: o.order,
      mac: o.mac,
      walk: o.walk,
      G: o.G,
      leafSize: o.leafSize,
      groupSize: o.groupSize === 'auto' ? 0 : o.groupSize,  // 0: the native side's automatic choice
      selfPotential: selfPotentialModel(o.selfPotential),
      softening: o.softening,
      accelerations: o.accelerations,
      threads: o.threads,
      periodic: this.periodic,
      ewaldResolution: o.ewaldResolution,
      ewaldExpansion: o.ewaldExpansion,
      densityContrast: o.densityContrast,
      autoGpuMinCells: o.autoGpuMinCells,
      ...(box ? { box } : {}),
      distributed,
    };
  }

  private toResult(method: SolveStats['method'], n: number, r: NativeResult): SolveResult {
    const result: SolveResult = { potential: r.potential, stats: this.toStats(method, n, r.stats) };
    if (r.ax && r.ay && r.az) result.accelerations = { x: r.ax, y: r.ay, z: r.az };
    return result;
  }

  private toStats(method: SolveStats['method'], n: number, s: NativeStats): SolveStats {
    const approx = n > 0 ? s.approxInteractions / n : 0;
    const direct = n > 0 ? s.directInteractions / n : 0;
    const stats: SolveStats = {
      // what ran (a distributed solve: this rank's share) and why, as the native policy reports it
      backend: s.backend,
      backendReason: s.backendReason,
      method,
      cells: n,
      threads: s.threads,
      seconds: {
        upload: s.secondsUpload,
        keysAndSort: s.secondsKeys,
        build: s.secondsBuild,
        moments: s.secondsMoments,
        walk: s.secondsWalk,
        download: s.secondsDownload,
        total: s.secondsTotal,
      },
      deviceBytesPerCell: s.deviceBytesPerCell,
      approxInteractionsPerCell: approx,
      directInteractionsPerCell: direct,
      interactionsPerCell: approx + direct,
      cellsPerSecond: s.secondsTotal > 0 ? n / s.secondsTotal : 0,
      nodes: s.nodes,
      leaves: s.leaves,
      groups: s.groups,
      treeDepth: s.treeDepth,
      ranks: s.distributed?.ranks ?? 1,
      ...(s.distributed ? { distributed: s.distributed } : {}),
      ewaldTable: {
        source: s.ewaldTableSource ?? 'none',
        seconds: s.secondsEwaldTable ?? 0,
        ...(s.ewaldCacheWarning ? { cacheWarning: s.ewaldCacheWarning } : {}),
      },
      densityContrast: s.densityContrast ?? false,
      meanDensity: s.meanDensity ?? 0,
      meanPotential: s.meanPotential ?? 0,
      treeReused: s.treeReused ?? false,
    };
    return stats;
  }
}
