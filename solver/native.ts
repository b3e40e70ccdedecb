/**
 * Loads the native addon built by `npm install` (cmake-js) and describes it to the rest of the package.
 * @private
 */
import { createRequire } from 'node:module';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeLoadError } from './errors.js';

/** Plain struct of arrays handed to the addon (all Float64Array of one length). */
export interface NativeCells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
}

/** Options as the addon reads them (see native/core/types.h SolveOptions). */
export interface NativeOptions {
  /** The request; the native backend policy (native/api/session.h) picks what runs. */
  backend: 'auto' | 'cpu' | 'cuda';
  /** Far-field method; fmmOrder, fmmTheta, fmmTolerance and fmmAccelTolerance are read with 'fmm'. */
  method: 'tree' | 'fmm';
  fmmOrder: number;
  fmmTheta: number;
  fmmTolerance: number;
  fmmAccelTolerance: number;
  theta: number;
  order: 1 | 2;
  mac: 'barnes' | 'bonsai';
  walk: 'box' | 'vote';
  G: number;
  leafSize: number;
  groupSize: number;  // 0: automatic (native/core/types.h cellGroupSize, pointGroupSize)
  selfPotential: 'none' | 'cube' | 'lattice';
  /** The particles' kernel (system solves). */
  softening: 'spline' | 'plummer';
  accelerations: boolean;
  threads: number;
  /** Periodic axes [x, y, z]; any periodic axis needs `box`. */
  periodic: [boolean, boolean, boolean];
  ewaldResolution: number;
  ewaldExpansion: boolean;
  densityContrast: boolean;
  box?: { lo: [number, number, number]; hi: [number, number, number] };
  /** A collective tree solve over the MPI world (see native/mpi/distributed_solve.h). */
  distributed?: boolean;
  /** 'auto' on a GPU: fewer cells than this run on the CPU (0: off). */
  autoGpuMinCells?: number;
}

export interface NativeStats {
  /** What ran (a distributed solve: this rank's share). */
  backend: 'cpu' | 'cuda';
  /** Why, e.g. "auto: CUDA device present" (native/api/session.h). */
  backendReason: string;
  threads: number;
  secondsKeys: number;
  secondsBuild: number;
  secondsMoments: number;
  secondsWalk: number;
  secondsTotal: number;
  secondsUpload: number;
  secondsDownload: number;
  deviceBytesPerCell: number;
  approxInteractions: number;
  directInteractions: number;
  nodes: number;
  leaves: number;
  groups: number;
  treeDepth: number;
  secondsEwaldTable: number;
  ewaldTableSource: 'none' | 'memory' | 'disk' | 'built';
  /** Present when this solve built the Ewald table and could not cache it on disk (why, and what to do). */
  ewaldCacheWarning?: string;
  densityContrast: boolean;
  meanDensity: number;
  meanPotential: number;
  /** A block solve kept the tree of the previous call (the mesh was unchanged). */
  treeReused?: boolean;
  /** Present after a distributed solve over more than one rank. */
  distributed?: NativeDistributedStats;
}

/** What a distributed solve did on this rank (native/core/types.h DistributedStats). */
export interface NativeDistributedStats {
  ranks: number;
  rank: number;
  /** The backend that did this rank's share: 'cuda' for a GPU rank, 'cpu' otherwise (periodic boxes included). */
  backend: 'cpu' | 'cuda';
  /** A GPU rank's CUDA device: its node-local rank modulo the node's devices (several ranks may share one); -1 on
   * the CPU. */
  device: number;
  bytesSent: number;
  bytesReceived: number;
  letNodesSent: number;
  letCellsSent: number;
  letsSent: number;
  letsReceived: number;
  /** Particle LETs (a system solve with particles): bytes of this rank's messages sent and received (with their
   * 8-byte size headers), their nodes and particles sent, and their count. 0 without particles. */
  particleBytesSent: number;
  particleBytesReceived: number;
  particleLetNodesSent: number;
  particleLetParticlesSent: number;
  particleLetsSent: number;
  particleLetsReceived: number;
  secondsAgree: number;
  secondsLetSelect: number;
  secondsLocalWalk: number;
  secondsExchange: number;
  secondsExchangeWait: number;
  secondsOverlap: number;
  secondsRemoteWalk: number;
}

/** The MPI world as the addon sees it. */
export interface NativeMpiWorld {
  /** This build has MPI. */
  built: boolean;
  /** MPI is initialised in this process. */
  active: boolean;
  rank: number;
  size: number;
  /** This rank among the ranks on its node (its GPU is localRank mod the node's device count). */
  localRank: number;
  reason: string;
}

export interface NativeResult {
  potential: Float64Array;
  ax?: Float64Array;
  ay?: Float64Array;
  az?: Float64Array;
  stats: NativeStats;
  /** Set when 'auto' left the GPU for the CPU (too little device memory for this input). */
  warning?: string;
}

/** Softened point sources and targets of a system solve: softening per particle, or one number for all. */
export interface NativeParticles {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  softening: Float64Array | number;
}

/** What a system solve did beside the cells' walk (native/core/system.h SystemStats). */
export interface NativeSystemStats {
  /** Cells computed (all of them without a subset). */
  targets: number;
  /** Cell walk groups walked. */
  targetGroups: number;
  probes: number;
  probeGroups: number;
  probeApproxInteractions: number;
  probeDirectInteractions: number;
  secondsProbes: number;
  particles: number;
  particleGroups: number;
  /** Nodes of the particles' tree. */
  particleNodes: number;
  /** Node and point interactions of the softened walks, summed over their targets. */
  particleApproxInteractions: number;
  particleDirectInteractions: number;
  secondsParticles: number;
}

/** What solveSystem resolves with. */
export interface NativeSystemResult {
  cells: NativeOutputs;
  particles: NativeOutputs;
  probes: NativeOutputs;
  stats: NativeStats & { system: NativeSystemStats };
  warning?: string;
}

/** The native backend policy's decision for a solver (native/api/session.h chooseBackend). */
export interface NativeBackendPolicy {
  backend: 'cpu' | 'cuda';
  reason: string;
  /** 'auto' fell back to the CPU though CUDA was built: the line to print (once per process). */
  notice?: string;
  /** backend 'cuda' without a usable GPU: the NoDevice message. */
  error?: string;
}

export interface NativeFeatures {
  cpu: boolean;
  /** The CUDA backend was compiled in. */
  cudaBuilt: boolean;
  /** ...and a usable device is present now. */
  cuda: boolean;
  /** Why CUDA is or is not usable. */
  cudaReason: string;
  /** CUDA devices present (0 without a driver or without the CUDA backend). */
  cudaDevices: number;
  /** The MPI layer was compiled in. */
  mpi: boolean;
  mpiReason: string;
}

/** Caller arrays that receive the results (one element per cell; ax, ay, az with accelerations). */
export interface NativeOutputs {
  potential: Float64Array;
  ax?: Float64Array;
  ay?: Float64Array;
  az?: Float64Array;
}

/**
 * The leaf blocks of a block-structured mesh and their density (native/core/blocks.h): cell (i, j, k) of block b
 * has centre lo + (i + 0.5) dx (per axis), size dx, mass density * (dx dy dz); the density and the results are read
 * and written in place at element slot * blockStride + varStride * (((k + gz) NY + j + gy) NX + i + gx).
 */
export interface NativeBlocks {
  nxb: number;
  nyb: number;
  nzb: number;
  /** 3 per block: the lower corner of the block's interior, cm. */
  lo: Float64Array;
  /** 3 per block: the cell widths (cubes: equal within 1e-12), cm. */
  dx: Float64Array;
  /** g cm^-3; the results come back in this type and layout. */
  density: Float64Array | Float32Array;
  /** Guard cells per side, one number or [gx, gy, gz]. Default 0. */
  guard?: number | [number, number, number];
  /** The storage slot of each block in the density/result arrays. Default: block b at slot b. */
  blockIndex?: Int32Array;
  /** Elements between neighbouring cells (FLASH's unk: the variable count). Default 1. */
  varStride?: number;
  /** Elements between block slots. Default 0: varStride * NX * NY * NZ. */
  blockStride?: number;
  /** The mesh changed since the last call: rebuild the tree without comparing the geometry. Default false. */
  meshChanged?: boolean;
}

/** Where a block solve writes its results: arrays of the density's type and layout. */
export interface NativeBlockOutputs {
  potential: Float64Array | Float32Array;
  ax?: Float64Array | Float32Array;
  ay?: Float64Array | Float32Array;
  az?: Float64Array | Float32Array;
}

/** What solveBlocks resolves with: the statistics (the results are in the caller's arrays). */
export interface NativeBlocksResult {
  stats: NativeStats;
  warning?: string;
}

/** What ewaldTable() returns: the table's grid and provenance, and values at the points `at` if given. */
export interface NativeEwaldTable {
  n: [number, number, number];
  h: [number, number, number];
  points: number;
  bytes: number;
  secondsBuild: number;
  secondsLoad: number;
  source: 'memory' | 'disk' | 'built';
  cachePath: string;
  cacheNote: string;
  /** Per point: C, dC/dx, dC/dy, dC/dz from the table. */
  lookup?: Float64Array;
  /** Per point: the 20 exact coefficients (C, gradient, Hessian, third derivatives). */
  exact?: Float64Array;
  /** With gridCheck: per coefficient, max |stored - exact| and max |exact| over the checked grid points. */
  gridMaxDiff?: Float64Array;
  gridMaxAbs?: Float64Array;
}

export interface NativeEwaldRequest {
  L: [number, number, number];
  periodic: [boolean, boolean, boolean];
  resolution?: number;
  threads?: number;
  memoryCache?: boolean;
  at?: Float64Array;
  exact?: boolean;
  /** compare the stored coefficients at about this many grid points with the exact sums (gridMaxDiff, gridMaxAbs) */
  gridCheck?: number;
}

export interface NativeAddon {
  ewaldTable(request: NativeEwaldRequest): NativeEwaldTable;
  /** ewaldTable on a worker thread: the same request and result, without blocking the event loop. */
  ewaldTableAsync(request: NativeEwaldRequest): Promise<NativeEwaldTable>;
  solve(cells: NativeCells, options: NativeOptions, out?: NativeOutputs): Promise<NativeResult>;
  direct(cells: NativeCells, options: NativeOptions, out?: NativeOutputs): Promise<NativeResult>;
  /** A system solve (native/core/system.h): cells, probes, a subset of target cells; method 'tree' or 'direct'. */
  solveSystem(
    system: {
      cells: NativeCells;
      particles?: NativeParticles;
      probes?: { x: Float64Array; y: Float64Array; z: Float64Array };
      targets?: Uint32Array;
    },
    options: NativeOptions,
    method: 'tree' | 'direct',
  ): Promise<NativeSystemResult>;
  /** The block entry (native/core/blocks.h): results written into `out` in the density's layout. */
  solveBlocks(blocks: NativeBlocks, options: NativeOptions, out: NativeBlockOutputs): Promise<NativeBlocksResult>;
  features(): NativeFeatures;
  /** The native backend policy for a solver with this request (distributed: collective over several ranks). */
  backendPolicy(backend: 'auto' | 'cpu' | 'cuda', distributed: boolean): NativeBackendPolicy;
  /** The CUDA probe's reason in a user's words ("no GPU driver found", ...). */
  gpuReasonInWords(cudaReason: string): string;
  mpiInit(force: boolean): NativeMpiWorld;
  mpiWorld(): NativeMpiWorld;
  mpiFinalize(): void;
  mpiAbort(message: string, code: number): never;
  mpiGather(values: Float64Array): Promise<Float64Array>;
  mpiFailSolve(code: string, message: string): Promise<never>;
  /** The GPU a rank with this node-local rank uses among deviceCount (native/mpi/mpi_world.h deviceForLocalRank). */
  mpiDeviceFor(localRank: number, deviceCount: number): number;
}

/** The package root: two levels above this file both in solver/*.ts (vitest) and in dist/solver/*.js. */
function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'CMakeLists.txt'))) return dir;
    dir = resolve(dir, '..');
  }
  return resolve(dirname(fileURLToPath(import.meta.url)), '..');
}

let cached: NativeAddon | undefined;
let cachedFeatures: NativeFeatures | undefined;

/** The addon's features, probed once (probing CUDA initialises the driver). */
export function nativeFeatures(): NativeFeatures {
  cachedFeatures ??= loadNative().features();
  return cachedFeatures;
}

/** The addon, loaded once. Tries AMRGRAV_ADDON, then build/Release, and reports every failure with a fix. */
export function loadNative(): NativeAddon {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const root = packageRoot();
  const candidates = [process.env.AMRGRAV_ADDON, join(root, 'build', 'Release', 'amrgrav.node')].filter(
    (p): p is string => typeof p === 'string' && p.length > 0,
  );
  const failures: string[] = [];
  for (const path of candidates) {
    try {
      cached = require(path) as NativeAddon;
      return cached;
    } catch (err) {
      failures.push(`  ${path}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  throw new NativeLoadError(
    `the amrgrav native addon could not be loaded; tried:\n${failures.join('\n')}\n` +
      `Build it with 'npm run build:native' (needs cmake and a C++17 compiler) in ${root}.`,
  );
}

/** What this installation of amrgrav has (see {@link features}). */
export interface Features {
  /** The package version (package.json). */
  version: string;
  /** The CUDA backend was built (nvcc was found at install, and AMRGRAV_CUDA was not OFF). */
  cuda: boolean;
  /** A GPU this build can run on is usable now (backend 'auto' picks it). */
  gpu: boolean;
  /** Why the GPU is or is not usable. */
  gpuReason: string;
  /** The MPI layer was built (an MPI library was found at install): solves under mpirun are distributed. */
  mpi: boolean;
  mpiReason: string;
}

/**
 * What was built and what is usable: the CUDA backend, a GPU now, MPI, and the version.
 * @throws NativeLoadError when the native addon is missing.
 * @example
 * import { features } from 'amrgrav';
 * console.log(features()); // { version: '0.1.0', cuda: true, gpu: false, gpuReason: '...', mpi: true, ... }
 */
export function features(): Features {
  const f = nativeFeatures();
  const pkg = JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  return { version: pkg.version, cuda: f.cudaBuilt, gpu: f.cuda, gpuReason: f.cudaReason, mpi: f.mpi, mpiReason: f.mpiReason };
}
