/**
 * amrgrav public API (the package's main entry): the solver, its options and errors, the AMR mesh, FLASH files,
 * the Ewald table and the MPI helpers. The validation problems and runs are the 'amrgrav/validation' entry
 * (validation/index.ts); the command line is app/cli.ts.
 */
export { GravitySolver } from './gravitySolver.js';
export { features } from './native.js';
export type { Features } from './native.js';
export type { SolveResult, SolveStats, CellSolveOptions, MeshSolveOptions } from './gravitySolver.js';
export type { SystemSolveResult, SystemSolveStats } from './gravitySolver.js';
export type { SystemInput, SystemSolveOptions, ParticleInput, ProbeInput, PartResult } from './system.js';
export { GravityModule } from './gravityModule.js';
export type { GravityModuleOptions, CellLayout, GravityState, GravityStep, GravityTotals } from './gravityModule.js';
export { defaultOptions, resolveOptions, periodicAxes, selfPotentialModel } from './options.js';
export type { SolverOptions, SofteningChoice, SelfPotentialChoice, BackendChoice, MacChoice, WalkChoice, BoundaryChoice, AxisBoundary } from './options.js';
export { ewaldTable, ewaldTableAsync, ewaldCacheDir } from './ewaldTable.js';
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
export { solveFlashFile } from './solveFile.js';
export type { SolveFileOptions, SolveFileReport } from './solveFile.js';
export type { Progress } from './progress.js';
export { mpiWorld, isMultiRank, gatherToRoot, abortAllRanks } from './mpi/world.js';
export type { MpiWorld } from './mpi/world.js';
export { chunkOf, rankChunk } from './mpi/decomposition.js';
export { solveWholeProblem } from './mpi/wholeProblem.js';
export type { WholeProblemSolve } from './mpi/wholeProblem.js';
