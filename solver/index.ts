/**
 * amrgrav public API: the solver, its options and errors, the AMR mesh, and the validation problems.
 */
export { GravitySolver } from './gravitySolver.js';
export { features } from './native.js';
export type { Features } from './native.js';
export type { SolveResult, SolveStats, CellSolveOptions, MeshSolveOptions } from './gravitySolver.js';
export { GravityModule } from './gravityModule.js';
export type { GravityModuleOptions, CellLayout, GravityState, GravityStep, GravityTotals } from './gravityModule.js';
export { defaultOptions, resolveOptions, periodicAxes, selfPotentialModel } from './options.js';
export type { SolverOptions, SelfPotentialChoice, BackendChoice, MacChoice, WalkChoice, BoundaryChoice, AxisBoundary } from './options.js';
export { ewaldTable, ewaldCacheDir } from './ewaldTable.js';
export type { EwaldTableRequest, EwaldTableInfo } from './ewaldTable.js';
export type { CellInput, Box } from './cells.js';
export {
  AmrgravError,
  InvalidInputError,
  InvalidOptionError,
  OutOfMemoryError,
  NoDeviceError,
  NativeLoadError,
  InternalError,
} from './errors.js';
export type { ErrorCode } from './errors.js';
export * from '../mesh/index.js';
export { runMaclaurin, sweepMaclaurin } from '../validation/maclaurinRun.js';
export type { MaclaurinReport, MaclaurinRunOptions } from '../validation/maclaurinRun.js';
export { maclaurinProblem } from '../validation/maclaurinSetup.js';
export { solveFlashFile } from './solveFile.js';
export type { SolveFileOptions, SolveFileReport } from './solveFile.js';
export { writeProblemFile, problemData } from '../validation/problemFiles.js';
export type { ProblemKind, ProblemFileOptions } from '../validation/problemFiles.js';
export { mpiWorld, isMultiRank, gatherToRoot, abortAllRanks } from './mpi/world.js';
export type { MpiWorld } from './mpi/world.js';
export { chunkOf, rankChunk } from './mpi/decomposition.js';
export { solveWholeProblem } from './mpi/wholeProblem.js';
export type { WholeProblemSolve } from './mpi/wholeProblem.js';
