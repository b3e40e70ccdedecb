/**
 * \file flashParticles.ts
 * \brief The particles of a FLASH file: the 'tracer particles' table (one row per particle, one float64 column per
 * property) and its column names, 'particle names' (FLASH4's io_h5write_particles: [nprops, 1] fixed strings of 24
 * characters, space-padded, such as 'posx', 'mass', 'tag', 'blk', 'gpot', 'accx'). Which particles are gravity
 * sources, their softening length, and the table with result columns replaced, for `amrgrav solve`.
 */
import { FlashFileError, MeshError } from './errors.js';
import type { FlashData, RawDataset } from './flashFormat.js';

/** The table's dataset and the names' dataset, as FLASH names them. */
export const PARTICLE_TABLE = 'tracer particles';
export const PARTICLE_NAMES = 'particle names';

/**
 * The particle properties a solve writes when the file has them (FLASH's GPOT_PART_PROP and ACCX/Y/Z_PART_PROP):
 * the potential, erg/g, and the accelerations, cm s^-2.
 */
export const PARTICLE_POTENTIAL_COLUMN = 'gpot';
export const PARTICLE_ACCELERATION_COLUMNS = ['accx', 'accy', 'accz'] as const;

/** FLASH's sink-particle runtime parameter: the radius (cm) inside which sink gravity is softened. */
export const SINK_SOFTENING_RADIUS = 'sink_softening_radius';
/** FLASH's choice of kernel for sink-sink softening ('spline' or 'linear'). */
export const SINK_SOFTENING_TYPE = 'sink_softening_type_sinks';
/** The spline kernel's radius in Plummer-equivalent softening lengths (native/physics/softening_k.h). */
const SPLINE_RADIUS = 2.8;

/** A file's particle table as stored. */
export interface FlashParticleTable {
  /** Column names in file order, padding removed. */
  names: string[];
  /** Particles (rows). */
  count: number;
  /** count x names.length values, row-major, as float64 (the stored values exactly). */
  table: Float64Array;
}

/** The particles as gravity sources and targets, in the table's row order. */
export interface FlashParticleSources {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  /** g, >= 0 (massless particles are targets only). */
  mass: Float64Array;
  /** Particles with mass > 0. */
  massive: number;
}

function extraDataset(data: FlashData, name: string): RawDataset | undefined {
  return data.extra.find((e) => e.name === name);
}

/**
 * The particle table of a file read by readFlashFile (its datasets arrive in `data.extra`), or null when the file
 * has none: no 'tracer particles', or an empty one without names (FLASH writes the names only when particles exist).
 * @throws FlashFileError 'BAD_SHAPE' when the table is not a 2-D numeric array or its width differs from the number
 *   of names; 'MISSING_DATASET' for particles without 'particle names'; 'BAD_PARTICLES' for repeated names.
 */
export function flashParticleTable(data: FlashData, path: string): FlashParticleTable | null {
  const t = extraDataset(data, PARTICLE_TABLE);
  const n = extraDataset(data, PARTICLE_NAMES);
  if (!t) {
    if (n) throw new FlashFileError('MISSING_DATASET', `${path}: '${PARTICLE_NAMES}' without '${PARTICLE_TABLE}'`);
    return null;
  }
  const numeric = typeof t.dtype === 'string' && /^<[fdiIqQ]$/.test(t.dtype) && !Array.isArray(t.data) && !(t.data instanceof Map);
  if (!numeric || t.shape.length !== 2) {
    throw new FlashFileError(
      'BAD_SHAPE',
      `${path}: '${PARTICLE_TABLE}' should be a 2-D array of numbers (particles x properties), got shape [${t.shape.join(', ')}] of type ${JSON.stringify(t.dtype)}`,
    );
  }
  const [count, width] = t.shape;
  if (!n) {
    if (count === 0) return null;
    throw new FlashFileError('MISSING_DATASET', `${path}: '${PARTICLE_TABLE}' holds ${count} particles but the file has no '${PARTICLE_NAMES}' to name its ${width} columns`);
  }
  if (!Array.isArray(n.data) || typeof n.dtype !== 'string' || !n.dtype.startsWith('S')) {
    throw new FlashFileError('BAD_SHAPE', `${path}: '${PARTICLE_NAMES}' should hold fixed-length strings, got type ${JSON.stringify(n.dtype)}`);
  }
  const names = (n.data as string[]).map((s) => String(s).replace(/[\s\0]+$/, '').trim());
  if (names.length !== width) {
    throw new FlashFileError(
      'BAD_SHAPE',
      `${path}: '${PARTICLE_NAMES}' names ${names.length} properties (${names.join(', ')}) but '${PARTICLE_TABLE}' has ${width} columns`,
    );
  }
  const seen = new Set<string>();
  for (const name of names) {
    if (seen.has(name)) throw new FlashFileError('BAD_PARTICLES', `${path}: '${PARTICLE_NAMES}' names '${name}' twice`);
    seen.add(name);
  }
  const values = t.data as ArrayLike<number>;
  if (values.length !== count * width) {
    throw new FlashFileError('CORRUPT_FILE', `${path}: '${PARTICLE_TABLE}' holds ${values.length} values, its shape [${count}, ${width}] says ${count * width}`);
  }
  return { names, count, table: values instanceof Float64Array ? values : Float64Array.from(values) };
}

/** One column of the table (a copy). */
export function particleColumn(t: FlashParticleTable, name: string): Float64Array {
  const c = t.names.indexOf(name);
  if (c < 0) throw new FlashFileError('MISSING_DATASET', `no particle property '${name}' (the file's: ${t.names.join(', ')})`);
  const w = t.names.length;
  const out = new Float64Array(t.count);
  for (let i = 0; i < t.count; i++) out[i] = t.table[i * w + c];
  return out;
}

/**
 * The particles as gravity sources, or null when they carry no mass: no 'mass' column, or every mass 0 (passive
 * tracers). Massless particles among massive ones stay in (targets that add nothing).
 * @throws FlashFileError 'BAD_PARTICLES' naming the particle (1-based row, and its tag when the file has one) for
 *   a position or mass that is not finite or a negative mass; 'MISSING_DATASET' for massive particles without
 *   'posx', 'posy' or 'posz'.
 */
export function flashParticleSources(t: FlashParticleTable, path: string): FlashParticleSources | null {
  if (!t.names.includes('mass')) return null;
  const mass = particleColumn(t, 'mass');
  const hasTag = t.names.includes('tag');
  const tags = hasTag ? particleColumn(t, 'tag') : null;
  const which = (i: number) => `particle ${i + 1}${tags ? ` (tag ${tags[i]})` : ''}`;
  let massive = 0;
  for (let i = 0; i < t.count; i++) {
    const m = mass[i];
    if (!Number.isFinite(m) || m < 0) {
      throw new FlashFileError('BAD_PARTICLES', `${path}: ${which(i)} of '${PARTICLE_TABLE}' has mass ${m} (expected a finite mass >= 0, g)`);
    }
    if (m > 0) massive++;
  }
  if (massive === 0) return null;
  for (const axis of ['posx', 'posy', 'posz']) {
    if (!t.names.includes(axis)) {
      throw new FlashFileError('MISSING_DATASET', `${path}: the particles have masses but no '${axis}' (properties: ${t.names.join(', ')})`);
    }
  }
  const [x, y, z] = ['posx', 'posy', 'posz'].map((a) => particleColumn(t, a));
  for (const [name, v] of [['posx', x], ['posy', y], ['posz', z]] as const) {
    for (let i = 0; i < t.count; i++) {
      if (!Number.isFinite(v[i])) throw new FlashFileError('BAD_PARTICLES', `${path}: ${which(i)} of '${PARTICLE_TABLE}' has ${name} ${v[i]} (not finite)`);
    }
  }
  return { x, y, z, mass, massive };
}

/**
 * Refuses particles outside the domain [lo, hi] (cm): FLASH keeps its particles inside (it drops those that leave
 * an outflow boundary), so one outside is a damaged table; the solver's tree would refuse it anyway.
 * @throws FlashFileError 'BAD_PARTICLES' naming the particle (row and tag), its position and the domain.
 */
export function checkParticlesInDomain(t: FlashParticleTable, s: FlashParticleSources, lo: readonly number[], hi: readonly number[], path: string): void {
  const tags = t.names.includes('tag') ? particleColumn(t, 'tag') : null;
  const pos = [s.x, s.y, s.z];
  for (let i = 0; i < t.count; i++) {
    for (let a = 0; a < 3; a++) {
      const v = pos[a][i];
      if (v >= lo[a] && v <= hi[a]) continue;
      throw new FlashFileError(
        'BAD_PARTICLES',
        `${path}: particle ${i + 1}${tags ? ` (tag ${tags[i]})` : ''} of '${PARTICLE_TABLE}' at (${s.x[i]}, ${s.y[i]}, ${s.z[i]}) cm lies outside the domain ` +
          `[${lo.join(', ')}] to [${hi.join(', ')}] (pos${'xyz'[a]})`,
      );
    }
  }
}

/** The particles' softening length and where it came from. */
export interface ParticleSoftening {
  /** Plummer-equivalent softening length, cm (the solver's convention: potential -G m / eps at a particle's centre). */
  length: number;
  /** 'option' (particleSoftening / --particle-softening) or the runtime parameter it was derived from. */
  from: 'option' | typeof SINK_SOFTENING_RADIUS;
}

/**
 * The softening of a file's particles: `option` (cm) when given; else FLASH's sink_softening_radius r (real runtime
 * parameter, cm) when the sinks' kernel is FLASH's spline (sink_softening_type_sinks 'spline' or absent), as
 * eps = r / 2.8: FLASH's spline reaches Newtonian gravity at r, ours at 2.8 eps.
 * @throws MeshError 'INVALID_OPTION' for an option that is not a finite length > 0, or when neither the option nor
 *   a usable runtime parameter gives one (the message names the option).
 */
export function particleSoftening(data: FlashData, option: number | undefined, massive: number, path: string): ParticleSoftening {
  if (option !== undefined) {
    if (typeof option !== 'number' || !Number.isFinite(option) || option <= 0) {
      throw new MeshError('INVALID_OPTION', `option 'particleSoftening' (--particle-softening): expected a length > 0 in cm, got ${String(option)}`);
    }
    return { length: option, from: 'option' };
  }
  const r = data.params.realRuntime.get(SINK_SOFTENING_RADIUS);
  const type = data.params.stringRuntime.get(SINK_SOFTENING_TYPE);
  const spline = type === undefined || type.toLowerCase() === 'spline';
  if (r !== undefined && Number.isFinite(r) && r > 0 && spline) return { length: r / SPLINE_RADIUS, from: SINK_SOFTENING_RADIUS };
  const why =
    r !== undefined && !spline
      ? `its ${SINK_SOFTENING_RADIUS} (${r} cm) is for FLASH's '${type}' kernel, which amrgrav does not have`
      : r !== undefined
        ? `its ${SINK_SOFTENING_RADIUS} is ${r} (not a length > 0)`
        : `it carries no ${SINK_SOFTENING_RADIUS} runtime parameter`;
  throw new MeshError(
    'INVALID_OPTION',
    `${path} holds ${massive} massive particles and ${why}: give their softening length with --particle-softening <cm> (option 'particleSoftening')`,
  );
}

/**
 * The table with the given columns replaced (a copy; every other value as stored). Columns the table lacks are
 * skipped; returns the new table and the names written, in the table's order.
 */
export function withParticleColumns(t: FlashParticleTable, columns: Map<string, Float64Array>): { table: Float64Array; written: string[] } {
  const table = new Float64Array(t.table);
  const w = t.names.length;
  const written: string[] = [];
  t.names.forEach((name, c) => {
    const v = columns.get(name);
    if (!v) return;
    if (v.length !== t.count) throw new FlashFileError('BAD_SHAPE', `particle property '${name}': ${v.length} values for ${t.count} particles`);
    for (let i = 0; i < t.count; i++) table[i * w + c] = v[i];
    written.push(name);
  });
  return { table, written };
}
