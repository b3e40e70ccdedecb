// Shared by the scripts mpirun starts (test/mpi/*.mjs): the seeded random generator (validation/random.ts, also
// test/helpers.ts's), scattered test cells and the --backend argument.

export { rng } from '../../dist/validation/random.js';

/** n cells spread over the unit box without coincident centres (integer hashes of i and seed), masses 1, size 0.01. */
export function scatteredCells(n, seed) {
  const c = { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n).fill(1), size: new Float64Array(n).fill(0.01) };
  for (let i = 0; i < n; i++) {
    c.x[i] = ((i * 37 + seed) % 101) / 101;
    c.y[i] = ((i * 53 + seed) % 103) / 103;
    c.z[i] = ((i * 71 + seed) % 107) / 107;
  }
  return c;
}

/**
 * --backend cpu|cuda|auto|mixed (default auto: the CPU on CI). choice: as given; backend: this rank's ('mixed':
 * even ranks on the GPU, odd ranks on the CPU).
 */
export function backendFromArgs(rank) {
  const i = process.argv.indexOf('--backend');
  const choice = i > 0 ? process.argv[i + 1] : 'auto';
  return { choice, backend: choice === 'mixed' ? (rank % 2 === 0 ? 'cuda' : 'cpu') : choice };
}
