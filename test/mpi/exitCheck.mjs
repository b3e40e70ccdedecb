// Run under mpirun by test/mpi.test.ts with a case name: rank 1 fails outside any solve (after mpiWorld(), before
// its first solve) while rank 0 waits in a solve; the job must end within seconds with rank 1's message.
//   throw: an uncaught error · reject: an unhandled rejection · exit: process.exit(3) · exitCode: process.exitCode = 4
//   kill: SIGKILL (no handler runs: mpirun itself ends the job)
import { GravitySolver, mpiWorld } from '../../dist/solver/index.js';

const what = process.argv[2];
const { rank } = mpiWorld();
if (rank === 1) {
  if (what === 'throw') throw new Error('rank 1 failed before its first solve');
  if (what === 'reject') await Promise.reject(new Error('rank 1 rejected before its first solve'));
  if (what === 'exit') process.exit(3);
  if (what === 'exitCode') process.exitCode = 4;
  if (what === 'kill') process.kill(process.pid, 'SIGKILL');
} else {
  const c = { x: new Float64Array([0.25, 0.75]), y: new Float64Array([0.5, 0.5]), z: new Float64Array([0.5, 0.5]), mass: new Float64Array([1, 1]), size: new Float64Array([0.1, 0.1]) };
  await new GravitySolver({ G: 1, threads: 1 }).solveCells(c); // waits for rank 1 without the abort
  console.log('not reached');
}
