/**
 * \file memory.ts
 * \brief Host-memory estimates made before large allocations: work that cannot fit is refused up front with an
 * OutOfMemoryError naming the size and the limit, instead of failing minutes later (or ending in a RangeError).
 */
import { constants } from 'node:buffer';
import { freemem, totalmem } from 'node:os';
import { OutOfMemoryError } from './errors.js';

/** 1536 -> "1.5 KiB", 5e9 -> "4.66 GiB". */
export function formatBytes(n: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
  let u = 0;
  while (Math.abs(n) >= 1024 && u < units.length - 1) {
    n /= 1024;
    u++;
  }
  return u === 0 ? `${n} bytes` : `${n.toPrecision(3)} ${units[u]}`;
}

/**
 * The most host memory one run may plan to use: `AMRGRAV_HOST_MEMORY_LIMIT` (bytes) if set, else 80% of the
 * machine's memory (os.totalmem).
 */
export function hostMemoryLimit(): { bytes: number; source: string } {
  const env = Number(process.env.AMRGRAV_HOST_MEMORY_LIMIT);
  if (process.env.AMRGRAV_HOST_MEMORY_LIMIT && Number.isFinite(env) && env > 0) return { bytes: env, source: 'AMRGRAV_HOST_MEMORY_LIMIT' };
  const total = totalmem();
  return { bytes: 0.8 * total, source: `80% of the ${formatBytes(total)} of host memory; ${formatBytes(freemem())} free now` };
}

/** Throws OutOfMemoryError when `bytes` (an estimate for `what`) exceeds {@link hostMemoryLimit}. */
export function checkHostMemory(bytes: number, what: string): void {
  const limit = hostMemoryLimit();
  if (!(bytes <= limit.bytes)) {
    throw new OutOfMemoryError(`${what} needs about ${formatBytes(bytes)} of host memory; the limit is ${formatBytes(limit.bytes)} (${limit.source})`);
  }
}

/** The largest typed array, in bytes, this Node allocates (4 GiB on Node 20): beyond it Node throws a RangeError. */
export const MAX_ARRAY_BYTES = constants.MAX_LENGTH;

/**
 * Refuses work that needs `cells` float64 values per array (cell positions, masses, potentials) beyond Node's
 * typed-array limit, and `bytesPerCell * cells` beyond {@link hostMemoryLimit}.
 * @throws OutOfMemoryError naming the size and the limit.
 */
export function checkCells(cells: number, bytesPerCell: number, what: string): void {
  if (cells * 8 > MAX_ARRAY_BYTES) {
    throw new OutOfMemoryError(
      `${what}: ${cells.toExponential(3)} cells need arrays of ${formatBytes(cells * 8)}; Node's typed arrays hold at most ` +
        `${formatBytes(MAX_ARRAY_BYTES)} (${Math.floor(MAX_ARRAY_BYTES / 8)} cells)`,
    );
  }
  checkHostMemory(cells * bytesPerCell, `${what} (${cells.toExponential(3)} cells at about ${bytesPerCell} bytes each)`);
}
