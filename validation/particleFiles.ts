/**
 * \file particleFiles.ts
 * \brief FLASH particle datasets for test and fuzz files: adds to {@link FlashData} what FLASH4's checkpoints hold
 * for particles: 'particle names' ([nprops, 1] strings of 24 characters, space-padded, FLASH's OUTPUT_PROP_LENGTH),
 * 'tracer particles' ([n, nprops] float64, rows sorted by block as FLASH writes them) and 'localnp' (particles per
 * block, which yt needs to find them).
 */
import { FLASH_LEAF, type FlashData } from '../mesh/flashFormat.js';
import { PARTICLE_NAMES, PARTICLE_TABLE } from '../mesh/flashParticles.js';

/** Width of a particle property name in 'particle names' (FLASH4's OUTPUT_PROP_LENGTH). */
export const FLASH_PARTICLE_NAME_LENGTH = 24;

/** The properties of a FLASH4 setup with massive particles and gravity, in the alphabetical order FLASH writes. */
export const MASSIVE_PARTICLE_PROPERTIES = ['accx', 'accy', 'accz', 'blk', 'gpot', 'mass', 'posx', 'posy', 'posz', 'proc', 'tag', 'velx', 'vely', 'velz'];

/** One particle: position (cm) and mass (g); other properties default to values a test can recognise. */
export interface ParticleSpec {
  x: number;
  y: number;
  z: number;
  mass: number;
  /** Other properties by name (e.g. velx); default: vel* = a value made from the tag, acc* 7, gpot 12345. */
  props?: Record<string, number>;
}

/** The leaf block (0-based) whose bounding box holds (x, y, z), or -1. */
export function leafBlockAt(d: FlashData, x: number, y: number, z: number): number {
  const p = [x, y, z];
  for (let b = 0; b < d.blockCount; b++) {
    if (d.nodeType[b] !== FLASH_LEAF) continue;
    let inside = true;
    for (let a = 0; a < 3 && inside; a++) inside = p[a] >= d.boundingBox[b * 6 + 2 * a] && p[a] < d.boundingBox[b * 6 + 2 * a + 1];
    if (inside) return b;
  }
  return -1;
}

/**
 * `d` with FLASH's particle datasets for `particles` (replacing any it had). Rows are sorted by their leaf block
 * ('blk', 1-based; -1 for a particle outside every block), 'tag' numbers the particles 1.. in the given order.
 * `names` replaces the column names as written (to make a file whose names do not match its table).
 */
export function withParticles(d: FlashData, particles: ParticleSpec[], opts: { properties?: string[]; names?: string[] } = {}): FlashData {
  const props = opts.properties ?? MASSIVE_PARTICLE_PROPERTIES;
  const rows = particles.map((p, i) => {
    const blk = leafBlockAt(d, p.x, p.y, p.z);
    const tag = i + 1;
    const v: Record<string, number> = {
      accx: 7,
      accy: 7,
      accz: 7,
      gpot: 12345,
      velx: 1000 + tag,
      vely: -2000 - tag,
      velz: 0.5 * tag,
      proc: 0,
      ...p.props,
      blk: blk >= 0 ? blk + 1 : -1,
      tag,
      mass: p.mass,
      posx: p.x,
      posy: p.y,
      posz: p.z,
    };
    return { blk, row: props.map((name) => v[name] ?? 0) };
  });
  rows.sort((a, b) => (a.blk < 0 ? Infinity : a.blk) - (b.blk < 0 ? Infinity : b.blk)); // stable: tags stay ordered within a block
  const table = new Float64Array(rows.length * props.length);
  rows.forEach((r, i) => table.set(r.row, i * props.length));
  const localnp = new Int32Array(d.blockCount);
  for (const r of rows) if (r.blk >= 0) localnp[r.blk]++;
  const names = (opts.names ?? props).map((s) => s.padEnd(FLASH_PARTICLE_NAME_LENGTH, ' '));
  const drop = new Set([PARTICLE_TABLE, PARTICLE_NAMES, 'localnp']);
  return {
    ...d,
    extra: [
      ...d.extra.filter((e) => !drop.has(e.name)),
      { name: 'localnp', shape: [d.blockCount], dtype: '<i', data: localnp },
      { name: PARTICLE_NAMES, shape: [names.length, 1], dtype: `S${FLASH_PARTICLE_NAME_LENGTH}`, data: names },
      { name: PARTICLE_TABLE, shape: [rows.length, props.length], dtype: '<d', data: table },
    ],
  };
}
