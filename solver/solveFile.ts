/**
 * \file solveFile.ts
 * \brief Solves a FLASH HDF5 file: read it, rebuild its mesh, solve for the potential (and accelerations), and
 * write a copy with 'gpot' (and 'gacx', 'gacy', 'gacz') added or replaced. The input file is only read.
 */
import { extractCells, writeBlockCells } from '../mesh/cells.js';
import { PARTICLE_TABLE, checkParticlesInDomain, flashParticleSources, flashParticleTable } from '../mesh/flashParticles.js';
import { MeshError } from '../mesh/errors.js';
import { flashToMesh, meshVariableToFlash } from '../mesh/flashMesh.js';
import { readFlashFile } from '../mesh/flashRead.js';
import { copyFlashFileWith } from '../mesh/flashCopy.js';
import { checkOutputPath } from '../mesh/outputFile.js';
import { restrictToParents } from '../mesh/restrict.js';
import { GravitySolver, type SolveStats } from './gravitySolver.js';
import { chunkOf } from './mpi/decomposition.js';
import { gatherToRoot, mpiWorld } from './mpi/world.js';
import { FLASH_LEAF, cellsPerBlock } from '../mesh/flashFormat.js';
import type { SolverOptions } from './options.js';
import type { Progress } from './progress.js';
import { fileParticles, solveCellsWithParticles, type ParticleReport } from './solveFileParticles.js';

export interface SolveFileOptions {
  /** Density variable, g cm^-3. Default 'dens'. */
  densityVar?: string;
  /** Solver options (theta, order, backend, G, accelerations, ...); see {@link SolverOptions}. */
  solver?: SolverOptions;
  /** Progress display; default none. */
  progress?: Progress;
  /**
   * Softening length of the file's massive particles, cm (Plummer-equivalent: a particle's potential at its own
   * centre is -G m / eps; the kernel is the solver option `softening`). Default: from the file's
   * sink_softening_radius runtime parameter r (FLASH's spline sinks) as r / 2.8; required when the file holds
   * massive particles and no such parameter.
   */
  particleSoftening?: number;
}

export interface SolveFileReport {
  /** MPI ranks that solved (1 in a single process). */
  ranks: number;
  input: string;
  output: string;
  blocks: number;
  leafBlocks: number;
  cells: number;
  /** Lowest and highest refinement level of the leaf blocks. */
  levels: [number, number];
  /** Gravitational energy W = 1/2 sum m phi over leaf cells (and particles, when they are sources), erg. */
  energy: number;
  /** Variables written by the solve. */
  written: string[];
  /** The particles, when the file's massive particles were sources (absent otherwise). */
  particles?: ParticleReport;
  /** Seconds per phase: read, mesh (rebuild the octree of blocks), solve (the solver's total), write. */
  seconds: { read: number; mesh: number; solve: number; write: number; total: number };
  solve: SolveStats;
}

/**
 * Solves `input` (a 3-D FLASH checkpoint or plot file) and writes `output`: a copy of every dataset of the
 * input plus 'gpot' (erg/g; parent blocks hold the mean of their children) and, with accelerations, 'gacx', 'gacy', 'gacz' (cm s^-2), in the input's precision.
 * Every dataset and attribute not replaced is copied byte for byte (see copyFlashFileWith).
 * Particles: when the file holds massive particles ('tracer particles' with a 'mass' column, some mass > 0), they
 * join the solve as softened sources and targets (softening: `particleSoftening`), the cells' potential includes
 * them, and their potential (and accelerations) replace the table's 'gpot' ('accx', 'accy', 'accz') columns where
 * the file has those; every other column stays as stored. Massless or absent particles change nothing.
 * @throws OutputFileError 'OUTPUT_IS_INPUT' when output is the input (also through links), 'OUTPUT_NOT_REGULAR'
 *   for an existing directory, device, FIFO or socket, 'WRITE_FAILED'; the errors of readFlashFile, flashToMesh,
 *   GravitySolver and copyFlashFileWith; for particles, FlashFileError 'BAD_SHAPE' (names and table width differ),
 *   'BAD_PARTICLES' (a position or mass not finite, a negative mass), MeshError 'INVALID_OPTION' (no softening).
 * @example
 * const r = await solveFlashFile('maclaurin.h5', 'maclaurin_gpot.h5', { solver: { theta: 0.5 } });
 */
export async function solveFlashFile(input: string, output: string, opts: SolveFileOptions = {}): Promise<SolveFileReport> {
  checkOutputPath(output, [input]); // before any work; checked again when the output is written
  if (mpiWorld().size > 1) return solveFlashFileDistributed(input, output, opts);
  const progress = opts.progress;
  const densityVar = opts.densityVar ?? 'dens';
  const solver = new GravitySolver(opts.solver ?? {});
  const t0 = performance.now();
  const data = await readFlashFile(input, { onProgress: (i, n, name) => progress?.update(`reading ${name}`, i, n) });
  if (!data.variables.has(densityVar)) {
    throw new MeshError('UNKNOWN_VARIABLE', `${input}: no variable '${densityVar}' (the file's variables: ${data.unknownNames.join(', ')})`);
  }
  const t1 = performance.now();
  progress?.phase('building the mesh');
  const fm = flashToMesh(data);
  const t2 = performance.now();
  const particles = fileParticles(data, input, opts.particleSoftening); // before the solve: a missing softening fails fast
  if (particles) checkParticlesInDomain(particles.table, particles.sources, fm.mesh.options.domainLo, fm.mesh.options.domainHi, input);
  progress?.phase(`solving (tree build and walk) on ${fm.mesh.leafBlocks().length * fm.mesh.cellsPerBlock} cells` + (particles ? ` and ${particles.table.count} particles` : ''));
  let cells = particles ? extractCells(fm.mesh, densityVar) : null; // the cell-only path extracts after the write, as before
  let potential: Float64Array;
  let stats: SolveStats;
  let particleReport: ParticleReport | undefined;
  let particleEnergy = 0;
  const datasets = new Map<string, Float64Array>();
  if (particles) {
    const p = await solveCellsWithParticles(solver, fm.mesh, cells!, particles, { potential: 'gpot', accelerations: ['gacx', 'gacy', 'gacz'] });
    ({ stats, report: particleReport } = p);
    potential = p.cellPotential;
    if (p.report.written.length > 0) datasets.set(PARTICLE_TABLE, p.table);
    for (let i = 0; i < particles.table.count; i++) particleEnergy += 0.5 * particles.sources.mass[i] * p.particles.potential[i];
  } else {
    const r = await solver.solve(fm.mesh, { densityVar });
    ({ potential, stats } = r);
  }
  const t3 = performance.now();
  const written = solver.options.accelerations ? ['gpot', 'gacx', 'gacy', 'gacz'] : ['gpot'];
  for (const v of written) {
    restrictToParents(fm.mesh, v);
    meshVariableToFlash(fm, data, v);
  }
  const replaced = new Map(written.map((v) => [v, data.variables.get(v)!]));
  await copyFlashFileWith(input, output, replaced, { datasets, onProgress: (i, n, name) => progress?.update(`writing ${name}`, i, n) });
  const t4 = performance.now();
  progress?.end();

  cells ??= extractCells(fm.mesh, densityVar);
  let energy = particleEnergy;
  for (let i = 0; i < cells.count; i++) energy += 0.5 * cells.mass[i] * potential[i];
  const leaves = fm.mesh.leafBlocks();
  const levels = leaves.reduce((mm, b) => [Math.min(mm[0], fm.mesh.block(b).level), Math.max(mm[1], fm.mesh.block(b).level)], [Infinity, 0]);
  return {
    ranks: 1,
    input,
    output,
    blocks: data.blockCount,
    leafBlocks: leaves.length,
    cells: cells.count,
    levels: [levels[0], levels[1]],
    energy,
    written,
    ...(particleReport ? { particles: particleReport } : {}),
    seconds: { read: (t1 - t0) / 1e3, mesh: (t2 - t1) / 1e3, solve: (t3 - t2) / 1e3, write: (t4 - t3) / 1e3, total: (t4 - t0) / 1e3 },
    solve: stats,
  };
}

/**
 * Under mpirun: every rank reads the file's block structure (small) and only its own chunk of the density (one
 * hyperslab: the leaf blocks in file order, which is PARAMESH's Morton order, cut into equal chunks), solves its
 * cells with the others through locally essential trees, and rank 0 gathers the potential and writes the output.
 * Cells and positions are those of the single-process path (the same mesh), so the result differs from it only by
 * the distributed walk (within 1e-4 at theta 0.5).
 */
async function solveFlashFileDistributed(input: string, output: string, opts: SolveFileOptions): Promise<SolveFileReport> {
  const { rank, size } = mpiWorld();
  const densityVar = opts.densityVar ?? 'dens';
  const solver = new GravitySolver(opts.solver ?? {});
  const t0 = performance.now();
  const structure = await readFlashFile(input, { variables: [] });
  if (!structure.unknownNames.includes(densityVar)) {
    throw new MeshError('UNKNOWN_VARIABLE', `${input}: no variable '${densityVar}' (the file's variables: ${structure.unknownNames.join(', ')})`);
  }
  const fm = flashToMesh(structure); // refuses 2-D files, as the single-process path does
  const table = flashParticleTable(structure, input);
  const sources = table ? flashParticleSources(table, input) : null;
  if (sources) {
    // every rank read the same structure, so every rank refuses alike
    throw new MeshError(
      'INVALID_OPTION',
      `${input} holds ${sources.massive} massive particles: particles are not solved under mpirun yet (issue #18); run 'amrgrav solve' on one rank`,
    );
  }
  const leaves: number[] = [];
  for (let b = 0; b < structure.blockCount; b++) if (structure.nodeType[b] === FLASH_LEAF) leaves.push(b);
  const mine = chunkOf(leaves.length, rank, size);
  const cpb = cellsPerBlock(structure);
  const myLeaves = leaves.slice(mine.begin, mine.end);
  const first = myLeaves.length > 0 ? myLeaves[0] : 0;
  const span = myLeaves.length > 0 ? myLeaves[myLeaves.length - 1] + 1 - first : 0;
  const part = span > 0 ? await readFlashFile(input, { blocks: { start: first, count: span }, variables: [densityVar] }) : undefined;
  const t1 = performance.now();
  // this rank's leaf cells, made as extractCells makes them (writeBlockCells), from its slice of the density
  const n = myLeaves.length * cpb;
  const cells = { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n), size: new Float64Array(n) };
  const dens = part?.variables.get(densityVar);
  myLeaves.forEach((b, l) => writeBlockCells(fm.mesh, fm.meshBlock[b], dens!, (b - first) * cpb, cells, l * cpb));
  const o = fm.mesh.options;
  const t2 = performance.now();
  const r = await solver.solveCells(cells, { box: { lo: [...o.domainLo], hi: [...o.domainHi] } });
  const t3 = performance.now();
  let localEnergy = 0;
  for (let i = 0; i < n; i++) localEnergy += 0.5 * cells.mass[i] * r.potential[i];
  const written = r.accelerations ? ['gpot', 'gacx', 'gacy', 'gacz'] : ['gpot'];
  const fields = r.accelerations ? [r.potential, r.accelerations.x, r.accelerations.y, r.accelerations.z] : [r.potential];
  const gathered: Float64Array[] = [];
  for (const f of fields) gathered.push(await gatherToRoot(f)); // leaf cells of all ranks, in file order
  const energies = await gatherToRoot(Float64Array.of(localEnergy));
  const cellsAll = await gatherToRoot(Float64Array.of(n));
  let t4 = performance.now();
  if (rank === 0) {
    // the whole file, to copy into the output with the gathered fields on its leaf blocks (parents: their mean)
    const data = await readFlashFile(input);
    const full = flashToMesh(data);
    for (let v = 0; v < written.length; v++) {
      full.mesh.addVariable(written[v]);
      const target = full.mesh.variable(written[v]);
      leaves.forEach((b, l) => target.set(gathered[v].subarray(l * cpb, (l + 1) * cpb), full.meshBlock[b] * cpb));
      restrictToParents(full.mesh, written[v]);
      meshVariableToFlash(full, data, written[v]);
    }
    await copyFlashFileWith(input, output, new Map(written.map((v) => [v, data.variables.get(v)!])));
    t4 = performance.now();
  }
  const levels = leaves.reduce((mm, b) => [Math.min(mm[0], structure.refineLevel[b]), Math.max(mm[1], structure.refineLevel[b])], [Infinity, 0]);
  return {
    ranks: size,
    input,
    output,
    blocks: structure.blockCount,
    leafBlocks: leaves.length,
    cells: rank === 0 ? cellsAll.reduce((a, b) => a + b, 0) : n,
    levels: [levels[0], levels[1]],
    energy: rank === 0 ? energies.reduce((a, b) => a + b, 0) : localEnergy,
    written,
    seconds: { read: (t1 - t0) / 1e3, mesh: (t2 - t1) / 1e3, solve: (t3 - t2) / 1e3, write: (t4 - t3) / 1e3, total: (t4 - t0) / 1e3 },
    solve: r.stats,
  };
}
