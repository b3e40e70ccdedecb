/**
 * The inputs and results of a system solve ({@link GravitySolver.solveSystem}, native/core/system.h): cells (sources
 * and targets), probes (targets only, anywhere) and an optional subset of the cells to compute. A later kind,
 * `particles` (softened sources and targets), joins as one more optional part of each.
 */
import { InvalidInputError } from './errors.js';
import { toNativeCells, type Box, type CellInput, type NumberArray } from './cells.js';
import type { NativeCells } from './native.js';

/** Target-only points (cm), all arrays of one length. */
export interface ProbeInput {
  x: NumberArray;
  y: NumberArray;
  z: NumberArray;
}

/** What a system solve is given; every part is optional (a missing part is empty). */
export interface SystemInput {
  /** Sources and targets, as {@link GravitySolver.solveCells} takes them. */
  cells?: CellInput;
  /**
   * Target-only points: the field of the cells at any position. A probe has no mass and no self term. A probe exactly
   * at a cell's centre gets every source but that cell's own point term (1/0, left out as a cell leaves out its own
   * pair): with the same interaction lists (method 'direct', or small theta) it equals the cell's potential without
   * its self term. Isolated axes: anywhere, also outside the box; periodic axes: wrapped into the box; the isolated
   * axes of a partly periodic box: inside the box.
   */
  probes?: ProbeInput;
}

export interface SystemSolveOptions {
  /** As {@link CellSolveOptions.box}: cells must lie in it; required with periodic boundaries. */
  box?: Box;
  /**
   * Compute only these cells (indices into `cells`; each at most once): every cell stays a source, and the potential
   * at each target is bitwise that of the full solve; only the walk groups that hold targets are walked, so the
   * walk's cost falls with the subset (per-level or active-subset solves). The cells' results are then one per
   * target, in this order. Default: every cell.
   */
  targets?: Uint32Array | Int32Array | readonly number[];
  /** 'tree' (default) or 'direct' (O(N^2) sums over the cells at every target: the reference; isolated boxes). */
  method?: 'tree' | 'direct';
}

/** The results at one kind of points, in its input order. */
export interface PartResult {
  /** erg g^-1 (negative). */
  potential: Float64Array;
  /** -grad(phi), cm s^-2, when the solver computes accelerations. */
  accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array };
}

/** Converts the probes to Float64Arrays and checks that the lengths agree (values are checked natively). */
export function toNativeProbes(p: ProbeInput): { x: Float64Array; y: Float64Array; z: Float64Array } {
  if (p === null || typeof p !== 'object') throw new InvalidInputError('probes must be an object {x, y, z}');
  const f = (name: string, v: unknown): Float64Array => {
    if (v instanceof Float64Array) return v;
    if (v instanceof Float32Array || Array.isArray(v)) return Float64Array.from(v as ArrayLike<number>);
    throw new InvalidInputError(`probes.${name} must be a Float64Array, Float32Array or number[] (got ${typeof v})`);
  };
  const x = f('x', p.x), y = f('y', p.y), z = f('z', p.z);
  if (y.length !== x.length || z.length !== x.length)
    throw new InvalidInputError(`mismatched array lengths: probes.x=${x.length}, y=${y.length}, z=${z.length}`);
  for (const [name, a] of [['x', x], ['y', y], ['z', z]] as const) {
    for (let i = 0; i < a.length; i++)
      if (!Number.isFinite(a[i])) throw new InvalidInputError(`probe ${i}: ${name} is not finite (got ${a[i]})`);
  }
  return { x, y, z };
}

/**
 * The targets as a Uint32Array of distinct cell indices below n.
 * @throws InvalidInputError naming the first bad entry (not an integer, negative, n or more, a repeat).
 */
export function toNativeTargets(t: SystemSolveOptions['targets'], n: number): Uint32Array {
  if (!(t instanceof Uint32Array || t instanceof Int32Array || Array.isArray(t)))
    throw new InvalidInputError('targets must be a Uint32Array, Int32Array or number[] of cell indices');
  const out = new Uint32Array(t.length);
  const seen = new Int32Array(n).fill(-1);
  for (let k = 0; k < t.length; k++) {
    const v = t[k] as number;
    if (!Number.isInteger(v) || v < 0 || v >= n)
      throw new InvalidInputError(`targets[${k}] = ${v} is not a cell index (an integer in [0, ${n}))`);
    if (seen[v] >= 0) throw new InvalidInputError(`targets[${k}] = ${v} repeats targets[${seen[v]}]: each cell at most once`);
    seen[v] = k;
    out[k] = v;
  }
  return out;
}

/** No cells: the empty arrays the native solve takes. */
export function noCells(): NativeCells {
  const e = new Float64Array(0);
  return { x: e, y: e, z: e, mass: e, size: e };
}

/** The cells part as the addon takes it (empty when absent). */
export function systemCells(input: SystemInput): NativeCells {
  return input.cells === undefined ? noCells() : toNativeCells(input.cells);
}
