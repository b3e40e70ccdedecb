/**
 * \file solveFileParticles.ts
 * \brief The particle part of `amrgrav solve` (solveFile.ts): a FLASH file's massive particles join the leaf cells
 * in one system solve (cells and particles as sources and targets, the particles softened), the cells' results go
 * back into the mesh as the cell-only solve writes them, and the particles' results into the table's 'gpot' and
 * 'accx', 'accy', 'accz' columns where the file has them.
 */
import { writeBack, type CellArrays } from '../mesh/cells.js';
import type { AmrMesh } from '../mesh/amrMesh.js';
import type { FlashData } from '../mesh/flashFormat.js';
import {
  PARTICLE_ACCELERATION_COLUMNS,
  PARTICLE_POTENTIAL_COLUMN,
  flashParticleSources,
  flashParticleTable,
  particleSoftening,
  withParticleColumns,
  type FlashParticleSources,
  type FlashParticleTable,
  type ParticleSoftening,
} from '../mesh/flashParticles.js';
import { AmrgravError } from './errors.js';
import type { GravitySolver, SolveStats } from './gravitySolver.js';
import type { SofteningChoice } from './options.js';
import type { PartResult } from './system.js';

/** A file's massive particles, ready to solve. */
export interface FileParticles {
  table: FlashParticleTable;
  sources: FlashParticleSources;
  softening: ParticleSoftening;
}

/** What the solve report says about the particles. */
export interface ParticleReport {
  /** Particles in the file (rows of 'tracer particles'); all of them are targets. */
  count: number;
  /** Particles with mass > 0: the sources. */
  sources: number;
  /** Total particle mass, g. */
  mass: number;
  /** Plummer-equivalent softening length, cm, and where it came from. */
  softening: number;
  softeningFrom: ParticleSoftening['from'];
  /** The softening kernel (the solver option `softening`). */
  kernel: SofteningChoice;
  /** Particle properties written ('gpot', and 'accx', 'accy', 'accz' with accelerations), those the file has. */
  written: string[];
}

/**
 * The file's particles when they are gravity sources (a 'tracer particles' table with a 'mass' column and some
 * mass > 0), else null: such files solve exactly as files without particles.
 * @throws the errors of flashParticleTable, flashParticleSources and particleSoftening (bad tables, bad values, no
 *   softening length).
 */
export function fileParticles(data: FlashData, path: string, softeningOption: number | undefined): FileParticles | null {
  const table = flashParticleTable(data, path);
  const sources = table ? flashParticleSources(table, path) : null;
  if (!table || !sources) return null;
  return { table, sources, softening: particleSoftening(data, softeningOption, sources.massive, path) };
}

/**
 * Solves the mesh's leaf cells (`cells`, extractCells order) with the particles as one system, writes the cells'
 * potential (and accelerations) into the mesh variables the cell-only solve writes, and returns the particle table
 * with its result columns replaced.
 */
export async function solveCellsWithParticles(
  solver: GravitySolver,
  mesh: AmrMesh,
  cells: CellArrays,
  p: FileParticles,
  vars: { potential: string; accelerations: readonly [string, string, string] },
): Promise<{ cellPotential: Float64Array; particles: PartResult; table: Float64Array; report: ParticleReport; stats: SolveStats }> {
  const { x, y, z, mass } = p.sources;
  const o = mesh.options;
  const r = await solver.solveSystem(
    { cells, particles: { x, y, z, mass, softening: p.softening.length } },
    { box: { lo: [...o.domainLo], hi: [...o.domainHi] } },
  );
  if (!r.cells || !r.particles) throw new AmrgravError('INTERNAL', 'the system solve returned no cell or particle results');
  mesh.addVariable(vars.potential);
  writeBack(mesh, vars.potential, cells, r.cells.potential);
  if (r.cells.accelerations) {
    const a = r.cells.accelerations;
    [a.x, a.y, a.z].forEach((v, k) => {
      mesh.addVariable(vars.accelerations[k]);
      writeBack(mesh, vars.accelerations[k], cells, v);
    });
  }
  const columns = new Map<string, Float64Array>([[PARTICLE_POTENTIAL_COLUMN, r.particles.potential]]);
  const pa = r.particles.accelerations;
  if (pa) PARTICLE_ACCELERATION_COLUMNS.forEach((c, k) => columns.set(c, [pa.x, pa.y, pa.z][k]));
  const { table, written } = withParticleColumns(p.table, columns);
  const report: ParticleReport = {
    count: p.table.count,
    sources: p.sources.massive,
    mass: mass.reduce((s, m) => s + m, 0),
    softening: p.softening.length,
    softeningFrom: p.softening.from,
    kernel: solver.options.softening,
    written,
  };
  return { cellPotential: r.cells.potential, particles: r.particles, table, report, stats: r.stats };
}
