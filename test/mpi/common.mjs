// Shared by the scripts mpirun starts (test/mpi/*.mjs): a seeded random generator (test/helpers.ts has the same for
// the vitest side) and the --backend argument.

/** mulberry32: a small seeded generator in [0, 1). */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
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
