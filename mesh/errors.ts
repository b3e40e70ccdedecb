/** Errors of the mesh module: one class, told apart by a stable `code`; an AmrgravError like every other. */
import { AmrgravError, type MeshErrorCode } from '../solver/errors.js';

/** The mesh's codes; the list lives with the error base (solver/errors.ts), which does not import the mesh. */
export type { MeshErrorCode };

export class MeshError extends AmrgravError {
  declare readonly code: MeshErrorCode;
  constructor(code: MeshErrorCode, message: string) {
    super(code, message);
  }
}

/** "mesh option 'nxb': expected an even integer >= 2, got 7" */
export function invalidMeshOption(name: string, expected: string, actual: unknown): MeshError {
  const shown = Array.isArray(actual) ? `[${actual.join(', ')}]` : typeof actual === 'string' ? JSON.stringify(actual) : String(actual);
  return new MeshError('INVALID_OPTION', `mesh option '${name}': expected ${expected}, got ${shown}`);
}

/** A FLASH HDF5 file that cannot be read, understood or written; the message names the file and the dataset. */
export class FlashFileError extends MeshError {}

/**
 * An output that cannot or must not be written: 'OUTPUT_IS_INPUT' (the same file as an input, also through
 * symlinks, hard links or '..'), 'OUTPUT_NOT_REGULAR' (an existing directory, device, FIFO or socket, never
 * replaced), 'WRITE_FAILED' (missing or read-only directory, disk full, ...).
 */
export class OutputFileError extends MeshError {}
