/**
 * Typed errors of amrgrav. Every error thrown by the public API is an {@link AmrgravError} with a stable `code`;
 * errors raised in native code arrive with the same codes and the caller's stack.
 *
 * The base of the package's errors: it imports nothing, so every module (mesh/ included) may derive from it.
 */

/** Codes of the solver's errors, shared with native/core/status.h. */
export type SolverErrorCode = 'INVALID_INPUT' | 'INVALID_OPTION' | 'OUT_OF_MEMORY' | 'NO_DEVICE' | 'NATIVE_LOAD' | 'INTERNAL';

/**
 * Codes of the mesh's errors (`MeshError`, mesh/errors.ts). Listed here, with the solver's, so that the base
 * of every error knows every code without importing the mesh module (mesh/ depends on this file, not the reverse).
 */
export type MeshErrorCode =
  | 'INVALID_OPTION'
  | 'UNKNOWN_VARIABLE'
  | 'INVALID_BLOCK'
  | 'NOT_A_LEAF'
  | 'MAX_LEVEL'
  | 'NON_CUBIC_CELLS'
  | 'LENGTH_MISMATCH'
  | 'STALE_CELLS'
  // FLASH HDF5 files (mesh/flash*.ts)
  | 'FILE_NOT_FOUND'
  | 'NOT_HDF5'
  | 'CORRUPT_FILE'
  | 'NOT_FLASH'
  | 'MISSING_DATASET'
  | 'BAD_SHAPE'
  | 'BAD_MESH'
  | 'BAD_PARTICLES'
  | 'UNSUPPORTED_DIMENSIONALITY'
  | 'WRITE_FAILED'
  // output paths (mesh/outputFile.ts)
  | 'OUTPUT_IS_INPUT'
  | 'OUTPUT_NOT_REGULAR'
  | 'UNSUPPORTED_DATATYPE';

/** Stable error codes: the solver's (shared with native/core/status.h) and the mesh's. */
export type ErrorCode = SolverErrorCode | MeshErrorCode;

export class AmrgravError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad cell data: NaN/Inf, negative mass, non-positive size, cells outside the box, mismatched lengths. */
export class InvalidInputError extends AmrgravError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
  }
}

/** An option with a wrong type or out of range. */
export class InvalidOptionError extends AmrgravError {
  constructor(message: string) {
    super('INVALID_OPTION', message);
  }
}

/** Host or device memory exhausted. */
export class OutOfMemoryError extends AmrgravError {
  constructor(message: string) {
    super('OUT_OF_MEMORY', message);
  }
}

/** A GPU backend was requested where this build or this machine has none. */
export class NoDeviceError extends AmrgravError {
  constructor(message: string) {
    super('NO_DEVICE', message);
  }
}

/** The native addon could not be loaded. */
export class NativeLoadError extends AmrgravError {
  constructor(message: string) {
    super('NATIVE_LOAD', message);
  }
}

/** A bug or a library failure inside the native core. */
export class InternalError extends AmrgravError {
  constructor(message: string) {
    super('INTERNAL', message);
  }
}

/** `invalidOption('theta', 'a number in (0, 1]', 2)` -> "option 'theta': expected a number in (0, 1], got 2 (number)" */
export function invalidOption(name: string, expected: string, actual: unknown): InvalidOptionError {
  const shown = typeof actual === 'string' ? JSON.stringify(actual) : String(actual);
  return new InvalidOptionError(`option '${name}': expected ${expected}, got ${shown} (${typeof actual})`);
}

/**
 * Turns an error rejected by the addon (a plain Error with a `code`) into the typed error, keeping the stack of
 * the caller (captured before the native call) so it points at user code.
 */
export function fromNativeError(err: unknown, callerStack: string | undefined, context: string): AmrgravError {
  const e = err as { code?: string; message?: string };
  const message = `${context}: ${e?.message ?? String(err)}`;
  let typed: AmrgravError;
  switch (e?.code) {
    case 'INVALID_INPUT':
      typed = new InvalidInputError(message);
      break;
    case 'INVALID_OPTION':
      typed = new InvalidOptionError(message);
      break;
    case 'OUT_OF_MEMORY':
      typed = new OutOfMemoryError(message);
      break;
    case 'NO_DEVICE':
      typed = new NoDeviceError(message);
      break;
    default:
      typed = new InternalError(message);
  }
  if (callerStack) typed.stack = `${typed.name}: ${message}\n${callerStack.split('\n').slice(1).join('\n')}`;
  return typed;
}
