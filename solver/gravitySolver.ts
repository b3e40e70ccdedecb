/**
 * GravitySolver: the public entry. Resolves options once, picks the backend, and runs solves on plain cell arrays
 * or on an AMR mesh (writing the potential, and accelerations if asked, back into block variables).
 */
import { InvalidOptionError, NoDeviceError, fromNativeError } from './errors.js';
import { periodicAxes, resolveOptions, type ResolvedOptions, type SolverOptions } from './options.js';
import { toNativeCells, type Box, type CellInput } from './cells.js';
import { loadNative, nativeFeatures, type NativeAddon, type NativeOptions, type NativeResult } from './native.js';
import { extractCells, writeBack, type AmrMesh } from '../mesh/index.js';

/** Per-solve statistics. Times in seconds. */
export interface SolveStats {
  backend: 'cpu' | 'cuda';
  /** Why this backend was chosen, e.g. "auto: no CUDA backend in this build". */
  backendReason: string;
  method: 'tree' | 'direct';
  cells: number;
  threads: number;
  /** upload/download: host <-> device copies (0 on the CPU). */
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
  /** Periodic solves: where the Ewald table came from and how long getting it took (s); 'none' when isolated. */
  ewaldTable: { source: 'none' | 'memory' | 'disk' | 'built'; seconds: number };
}

export interface SolveResult {
  /** Potential at each cell centre, erg g^-1 (negative), in the input order. */
  potential: Float64Array;
  /** -grad(phi) at each cell centre, cm s^-2, when `accelerations` was set. */
  accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array };
  stats: SolveStats;
}

export interface CellSolveOptions {
  /**
   * Cells must lie in this box (an error otherwise); the tree's root cube starts at its lower corner. Required
   * with periodic boundaries: its sides are the periods.
   */
  box?: Box;
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

export class GravitySolver {
  readonly options: ResolvedOptions;
  private readonly native: NativeAddon;
  private readonly backend: 'cpu' | 'cuda';
  private readonly backendReason: string;
  private readonly periodic: [boolean, boolean, boolean];

  /**
   * @param options see {@link SolverOptions}; defaults: theta 0.5, order 2, G 6.674e-8 (cgs), backend 'auto'.
   * @throws InvalidOptionError for a bad option (and for periodic boundaries with backend 'cuda': the Ewald walk
   *   is CPU-only so far; 'auto' picks the CPU); NoDeviceError for backend 'cuda' without a CUDA build or GPU;
   *   NativeLoadError when the addon is missing.
   * @example
   * const solver = new GravitySolver({ theta: 0.5 });
   * const { potential } = await solver.solveCells({ x, y, z, mass, size });
   */
  constructor(options: SolverOptions = {}) {
    this.options = resolveOptions(options);
    this.periodic = periodicAxes(this.options.boundary);
    const periodic = this.periodic.some((p) => p);
    this.native = loadNative();
    const features = nativeFeatures();
    if (periodic && this.options.backend === 'cuda') {
      throw new InvalidOptionError("option 'boundary': periodic boundaries are not on the CUDA backend yet; use backend 'cpu' or 'auto'");
    }
    if (periodic && this.options.backend === 'auto') {
      this.backend = 'cpu';
      this.backendReason = 'auto: periodic boundaries run on the CPU backend (no CUDA Ewald walk yet)';
    } else if (this.options.backend === 'cuda') {
      if (!features.cuda) throw new NoDeviceError(`backend 'cuda' was requested but ${features.cudaReason}`);
      this.backend = 'cuda';
      this.backendReason = 'requested';
    } else if (this.options.backend === 'cpu') {
      this.backend = 'cpu';
      this.backendReason = 'requested';
    } else {
      this.backend = features.cuda ? 'cuda' : 'cpu';
      this.backendReason = `auto: ${features.cudaReason}`;
      if (!features.cuda && features.cudaBuilt && !warnedFallback) {
        warnedFallback = true; // once per process: a hydro code constructs solvers often
        process.emitWarning(`amrgrav: falling back to the CPU backend (${features.cudaReason})`);
      }
    }
  }

  /**
   * Solves on the leaf cells of an AMR mesh (mass = density x cell volume) and writes the potential, and the
   * accelerations if asked, into block variables (created if missing). The density variable is not modified.
   * @throws MeshError for an unknown density variable or non-cubic cells; the errors of {@link solveCells}.
   */
  async solve(mesh: AmrMesh, opts: MeshSolveOptions = {}): Promise<SolveResult> {
    const cells = extractCells(mesh, opts.densityVar ?? 'dens');
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
   * Tree solve on plain cell arrays. Zero cells is valid and returns empty arrays.
   * @throws InvalidOptionError for periodic boundaries without `box`; InvalidInputError for cells outside the box.
   */
  async solveCells(cells: CellInput, opts: CellSolveOptions = {}): Promise<SolveResult> {
    return this.run('tree', cells, opts);
  }

  /** O(N^2) direct summation with the same self term: the reference the tree is measured against. */
  async directCells(cells: CellInput, opts: CellSolveOptions = {}): Promise<SolveResult> {
    return this.run('direct', cells, opts);
  }

  private async run(method: 'tree' | 'direct', cells: CellInput, opts: CellSolveOptions): Promise<SolveResult> {
    const callerStack = new Error().stack;
    if (this.periodic.some((p) => p) && !opts.box) {
      throw new InvalidOptionError(
        "option 'boundary': periodic boundaries need the box (its sides are the periods): pass solveCells(cells, { box })",
      );
    }
    const nc = toNativeCells(cells);
    const o = this.options;
    const nopts: NativeOptions = {
      backend: this.backend,
      theta: o.theta,
      order: o.order,
      mac: o.mac,
      walk: o.walk,
      G: o.G,
      leafSize: o.leafSize,
      groupSize: o.groupSize,
      selfPotential: o.selfPotential,
      accelerations: o.accelerations,
      threads: o.threads,
      periodic: this.periodic,
      ewaldResolution: o.ewaldResolution,
      ...(opts.box ? { box: opts.box } : {}),
    };
    let r: NativeResult;
    try {
      r = await (method === 'tree' ? this.native.solve(nc, nopts) : this.native.direct(nc, nopts));
    } catch (err) {
      throw fromNativeError(err, callerStack, method === 'tree' ? 'tree solve' : 'direct summation');
    }
    return this.toResult(method, nc.x.length, r);
  }

  private toResult(method: 'tree' | 'direct', n: number, r: NativeResult): SolveResult {
    const s = r.stats;
    const approx = n > 0 ? s.approxInteractions / n : 0;
    const direct = n > 0 ? s.directInteractions / n : 0;
    const stats: SolveStats = {
      backend: this.backend,
      backendReason: this.backendReason,
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
      ewaldTable: { source: s.ewaldTableSource ?? 'none', seconds: s.secondsEwaldTable ?? 0 },
    };
    const result: SolveResult = { potential: r.potential, stats };
    if (r.ax && r.ay && r.az) result.accelerations = { x: r.ax, y: r.ay, z: r.az };
    return result;
  }
}
