// Run under mpirun by test/mpi.test.ts: the GPU rank's plumbing that needs no GPU. Each rank prints one JSON line:
// its node-local rank and the device it would take on a node of two GPUs, and, on a machine without a usable GPU
// (CI), what backend 'cuda' does in a distributed solve: every rank must fail with NoDevice, none may hang, and a
// CPU solve works afterwards; the same for method 'fmm' (cuda/fmm_rank_phase.h) with every rank on 'cuda', and with
// rank 0 alone on 'cuda' (the others on the CPU: GPU and CPU ranks mix).
import { GravitySolver, mpiWorld } from '../../dist/solver/index.js';
import { loadNative, nativeFeatures } from '../../dist/solver/native.js';

const { rank, size, localRank } = mpiWorld();
const n = 100;
const cells = { x: new Float64Array(n), y: new Float64Array(n), z: new Float64Array(n), mass: new Float64Array(n).fill(1), size: new Float64Array(n).fill(0.01) };
for (let i = 0; i < n; i++) {
  cells.x[i] = ((i * 37 + rank) % 101) / 101 + rank;
  cells.y[i] = ((i * 53) % 103) / 103;
  cells.z[i] = ((i * 71) % 107) / 107;
}
const line = { rank, size, localRank, deviceOfTwo: loadNative().mpiDeviceFor(localRank, 2) };
if (!nativeFeatures().cuda) {
  try {
    await new GravitySolver({ G: 1, threads: 1, backend: 'cuda' }).solveCells(cells);
    line.cuda = { ok: true };
  } catch (err) {
    line.cuda = { ok: false, name: err.name, code: err.code, message: err.message };
  }
  for (const [key, backend] of [['fmmCuda', 'cuda'], ['fmmMixed', rank === 0 ? 'cuda' : 'cpu']]) {
    try {
      await new GravitySolver({ G: 1, threads: 1, backend, method: 'fmm' }).solveCells(cells);
      line[key] = { ok: true };
    } catch (err) {
      line[key] = { ok: false, name: err.name, code: err.code, message: err.message };
    }
  }
}
const r = await new GravitySolver({ G: 1, threads: 1, backend: 'cpu' }).solveCells(cells);
line.after = r.potential.length === n && r.stats.ranks === size && r.potential.every((v) => v < 0);
console.log(JSON.stringify(line));
