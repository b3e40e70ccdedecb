/**
 * The low-level input: plain arrays of cell centres (cm), masses (g) and cube sides (cm).
 */
import { InvalidInputError } from './errors.js';
import type { NativeCells } from './native.js';

export type NumberArray = Float64Array | Float32Array | readonly number[];

/** Cells as structs of arrays, all of one length. */
export interface CellInput {
  x: NumberArray;
  y: NumberArray;
  z: NumberArray;
  /** Cell masses in g (density x volume); >= 0. */
  mass: NumberArray;
  /** Cell sides in cm (cubic cells); > 0. A single number applies to every cell. */
  size: NumberArray | number;
}

/** An axis-aligned box [lo, hi] in cm. */
export interface Box {
  lo: [number, number, number];
  hi: [number, number, number];
}

function toFloat64(name: string, v: unknown): Float64Array {
  if (v instanceof Float64Array) return v;
  if (v instanceof Float32Array || Array.isArray(v)) return Float64Array.from(v as ArrayLike<number>);
  throw new InvalidInputError(`cells.${name} must be a Float64Array, Float32Array or number[] (got ${typeof v})`);
}

/** Converts to Float64Arrays and checks that the lengths agree (values are checked natively, with cell indices). */
export function toNativeCells(cells: CellInput): NativeCells {
  if (cells === null || typeof cells !== 'object') throw new InvalidInputError('cells must be an object {x, y, z, mass, size}');
  const x = toFloat64('x', cells.x);
  const y = toFloat64('y', cells.y);
  const z = toFloat64('z', cells.z);
  const mass = toFloat64('mass', cells.mass);
  const size = typeof cells.size === 'number' ? new Float64Array(x.length).fill(cells.size) : toFloat64('size', cells.size);
  const lengths = { x: x.length, y: y.length, z: z.length, mass: mass.length, size: size.length };
  if (Object.values(lengths).some((n) => n !== x.length)) {
    throw new InvalidInputError(
      `mismatched array lengths: ${Object.entries(lengths)
        .map(([k, n]) => `${k}=${n}`)
        .join(', ')}`,
    );
  }
  return { x, y, z, mass, size };
}
