/**
 * The Ewald table from TypeScript: build or fetch the table of a box shape and evaluate it (and the exact sums
 * behind it) at points. The solver does this by itself for periodic solves; this entry exists to measure the
 * table (tests, `amrgrav validate periodic`, the benchmark) and to warm the cache ahead of a run.
 *
 * Cache: one file per box shape (side ratios), periodic axes and resolution, in $AMRGRAV_CACHE_DIR, else
 * $XDG_CACHE_HOME/amrgrav, else ~/.cache/amrgrav; a file with a wrong header, size or checksum is rebuilt.
 */
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fromNativeError } from './errors.js';
import { loadNative, type NativeEwaldRequest, type NativeEwaldTable } from './native.js';

export type EwaldTableRequest = NativeEwaldRequest;
export type EwaldTableInfo = NativeEwaldTable;

/**
 * The table of a box with sides L (any length unit) and the given periodic axes.
 * @param request.resolution points per half period of the shortest periodic side, [4, 512] (default 28)
 * @param request.memoryCache false skips this process's memory cache (to exercise the disk cache)
 * @param request.at points x, y, z, ... at which to return `lookup` (C, grad C from the table)
 * @param request.exact also return the exact sums' 20 coefficients at those points
 * @throws InvalidOptionError for a bad geometry (no periodic axis, aspect ratio above 16, table too large)
 * @example
 * const t = ewaldTable({ L: [1, 1, 1], periodic: [true, true, true], at: new Float64Array([0, 0, 0]) });
 * t.lookup[0]; // C(0) = -2.8372975 for the unit cube
 */
export function ewaldTable(request: EwaldTableRequest): EwaldTableInfo {
  const stack = new Error().stack;
  try {
    return loadNative().ewaldTable(request);
  } catch (err) {
    throw fromNativeError(err, stack, 'Ewald table');
  }
}

/**
 * ewaldTable without blocking the event loop: the table is fetched or built (up to about a second) on a worker
 * thread; the same request, result and errors.
 * @example
 * const t = await ewaldTableAsync({ L: [1, 1, 1], periodic: [true, true, true] });
 */
export async function ewaldTableAsync(request: EwaldTableRequest): Promise<EwaldTableInfo> {
  const stack = new Error().stack;
  try {
    return await loadNative().ewaldTableAsync(request);
  } catch (err) {
    throw fromNativeError(err, stack, 'Ewald table');
  }
}

/** Where tables are cached (mirrors native/ewald/cache.cpp), '' when no directory can be named. */
export function ewaldCacheDir(): string {
  const env = process.env;
  if (env.AMRGRAV_CACHE_DIR) return env.AMRGRAV_CACHE_DIR;
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, 'amrgrav');
  const home = env.HOME ?? homedir();
  return home ? join(home, '.cache', 'amrgrav') : '';
}
