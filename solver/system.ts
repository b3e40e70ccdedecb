/**
 * The inputs and results of a system solve ({@link GravitySolver.solveSystem}, native/core/system.h): cells (sources
 * and targets), particles (softened sources and targets), probes (targets only, anywhere) and an optional subset of
 * the cells to compute.
 */
import { InvalidInputError } from './errors.js';
import { toNativeCells, type Box, type CellInput, type NumberArray } from './cells.js';
import type { NativeCells, NativeParticles } from './native.js';

/** Target-only points (cm), all arrays of one length. */
export interface ProbeInput {
  x: NumberArray;
  y: NumberArray;
  z: NumberArray;
}

/**
 * Softened point masses (stars, sinks, dark matter), sources and targets: positions (cm), masses (g, >= 0) and
 * softening lengths (cm, > 0) per particle or one number for all. The softening is the Plummer-equivalent length
 * for either kernel (the solver option `softening`): a particle's potential at its own centre is -G m / eps; the
 * spline kernel's radius is 2.8 eps. A pair is softened by max(eps_i, eps_j) (cells and probes: 0), so a
 * cell-particle pair takes the particle's softening and the cells' force on the particles is minus theirs on the
 * cells. A particle has no self term; distinct particles at one position interact (softened). Not yet supported
 * (an InvalidOptionError): periodic boundaries, distributed (MPI) solves, the CUDA backend. With a box every
 * particle must lie in it.
 */
export interface ParticleInput {
  x: NumberArray;
  y: NumberArray;
  z: NumberArray;
  mass: NumberArray;
  softening: number | NumberArray;
}

/** What a system solve is given; every part is optional (a missing part is empty). */
export interface SystemInput {
  /** Sources and targets, as {@link GravitySolver.solveCells} takes them. */
  cells?: CellInput;
  /** Softened sources and targets, see {@link ParticleInput}. */
  particles?: ParticleInput;
  /**
   * Target-only points: the field of the cells and particles at any position. A probe has no mass and no self term. A
   * probe exactly at a cell's centre gets every source but that cell's own point term (1/0, left out as a cell leaves
   * out its own pair): with the same interaction lists (method 'direct', or small theta) it equals the cell's
   * potential without its self term. A probe exactly on a particle gets that particle's softened -G m / eps. Isolated axes: anywhere, also outside the box; periodic axes: wrapped into the box; the isolated
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
  /**
   * 'tree' (default) or 'direct' (O(N^2) sums over the cells and particles at every target, with the same kernels and
   * pair softening: the reference; isolated boxes).
   */
  method?: 'tree' | 'direct';
}

/** The results at one kind of points, in its input order. */
export interface PartResult {
  /** erg g^-1 (negative). */
  potential: Float64Array;
  /** -grad(phi), cm s^-2, when the solver computes accelerations. */
  accelerations?: { x: Float64Array; y: Float64Array; z: Float64Array };
}

/** A Float64Array of a number array (Float64Arrays as they are), or a typed error naming the field. */
function float64(field: string, v: unknown): Float64Array {
  if (v instanceof Float64Array) return v;
  if (v instanceof Float32Array || Array.isArray(v)) return Float64Array.from(v as ArrayLike<number>);
  throw new InvalidInputError(`${field} must be a Float64Array, Float32Array or number[] (got ${describe(v)})`);
}

function describe(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v === 'object' ? (v as object).constructor?.name ?? 'object' : typeof v;
}

/**
 * Converts the particles to the addon's arrays and checks their types and lengths (a number for softening stays one
 * number). The values (finite, mass >= 0, softening > 0, inside the box) are checked natively.
 * @throws InvalidInputError naming the field.
 */
export function toNativeParticles(p: ParticleInput): NativeParticles {
  if (p === null || typeof p !== 'object')
    throw new InvalidInputError('particles must be an object {x, y, z, mass, softening}');
  const x = float64('particles.x', p.x), y = float64('particles.y', p.y), z = float64('particles.z', p.z);
  const mass = float64('particles.mass', p.mass);
  const soft = p.softening;
  if (soft === undefined)
    throw new InvalidInputError('particles.softening is missing: the softening length (cm, > 0), one number or one per particle');
  const softening = typeof soft === 'number' ? soft : float64('particles.softening', soft);
  const lengths: [string, number][] = [['y', y.length], ['z', z.length], ['mass', mass.length]];
  if (typeof softening !== 'number') lengths.push(['softening', softening.length]);
  for (const [name, n] of lengths)
    if (n !== x.length)
      throw new InvalidInputError(`mismatched array lengths: particles.x has ${x.length} elements but particles.${name} has ${n}`);
  return { x, y, z, mass, softening };
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
