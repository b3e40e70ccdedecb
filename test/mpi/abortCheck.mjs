// Run under mpirun by test/mpi.test.ts: rank 1 hits a failure the others cannot know about and ends the job with
// abortAllRanks while rank 0 waits in a collective; the job must end (not hang) with a non-zero status.
import { abortAllRanks, gatherToRoot, mpiWorld } from '../../dist/solver/index.js';

const { rank } = mpiWorld();
if (rank === 1) abortAllRanks('rank 1 could not read its part of the mesh');
await gatherToRoot(new Float64Array([rank])); // rank 0 would wait here for ever without the abort
console.log('not reached');
