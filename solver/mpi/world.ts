/**
 * The MPI world seen from TypeScript: which rank this process is, how many there are, and the few collectives
 * the solver's callers need (gather to rank 0, abort). MPI is initialised on first use when the process was
 * started by mpirun (or AMRGRAV_MPI=1 is set); a plain single process never touches MPI.
 */
import { fromNativeError } from '../errors.js';
import { loadNative, type NativeMpiWorld } from '../native.js';

export type MpiWorld = NativeMpiWorld;

let world: MpiWorld | undefined;

/**
 * This process's MPI world: rank 0 of 1 unless started by an MPI launcher (or with AMRGRAV_MPI=1).
 * The first call initialises MPI; it is finalised when the process exits.
 * @throws InvalidOptionError with AMRGRAV_MPI=1 in a build without MPI.
 * @example
 * const { rank, size } = mpiWorld();
 * if (rank === 0) console.log(`${size} ranks`);
 */
export function mpiWorld(): MpiWorld {
  if (world) return world;
  const native = loadNative();
  try {
    world = native.mpiInit(process.env.AMRGRAV_MPI === '1');
  } catch (err) {
    throw fromNativeError(err, new Error().stack, 'MPI initialisation');
  }
  if (world.active && world.size > 1) abortJobOnFailedExit();
  return world;
}

/**
 * A rank that ends with an uncaught error or a non-zero exit code ends the whole job (MPI_Abort) with its message.
 * Otherwise its exit runs MPI_Finalize, which waits for the other ranks, while they wait in a collective for it:
 * the job hangs. An exit with code 0 still finalises normally.
 */
function abortJobOnFailedExit(): void {
  let uncaught: unknown;
  // the monitor sees the error before Node prints it; Node prints only after the 'exit' listeners, which abort
  process.on('uncaughtExceptionMonitor', (err) => {
    uncaught = err;
  });
  process.on('exit', (code) => {
    if (code === 0) return;
    const what =
      uncaught === undefined
        ? `exited with code ${code}`
        : `uncaught ${uncaught instanceof Error ? (uncaught.stack ?? String(uncaught)) : String(uncaught)}`;
    loadNative().mpiAbort(what, code);
  });
}

/** True when this process is one of several MPI ranks. */
export function isMultiRank(): boolean {
  return mpiWorld().size > 1;
}

/**
 * Every rank's `values` concatenated in rank order on rank 0; an empty array on the other ranks (a copy of
 * `values` in a single process). Collective: every rank must call it.
 */
export async function gatherToRoot(values: Float64Array): Promise<Float64Array> {
  mpiWorld();
  try {
    return await loadNative().mpiGather(values);
  } catch (err) {
    throw fromNativeError(err, new Error().stack, 'gather to rank 0');
  }
}

/**
 * Prints `message` with this rank's number and ends every rank of the job (MPI_Abort): the exit for a failure
 * that the other ranks cannot know about, which would otherwise leave them waiting in a collective.
 */
export function abortAllRanks(message: string, code = 1): never {
  return loadNative().mpiAbort(message, code);
}

/**
 * Takes part, for a rank whose input was rejected before the native solve, in the agreement every distributed
 * solve starts with, so that all ranks raise the lowest failing rank's error. Always throws.
 * @private
 */
export async function failDistributedSolve(code: string, message: string): Promise<never> {
  return loadNative().mpiFailSolve(code, message);
}
