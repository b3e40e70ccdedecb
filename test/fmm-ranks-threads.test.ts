// The distributed FMM's driver with ranks as threads, no MPI needed (native/tests/fmm_ranks_threads.cpp): N CPU ranks
// = one process to the sums' order (isolated and fully periodic, slabs, scattered cells, an empty rank), and an
// evaluator that makes its own lists (fmm::RankLocal::makesLists, as a GPU rank walks them on its device) gets none
// from the driver and gives the plain ranks' results bit for bit; and the shared top of the ranks' trees against the
// one-process octree (native/tests/shared_top.cpp).
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

import { hostTest } from './hostTests.js';

describe('method fmm over ranks as threads (the driver without MPI)', () => {
  it('native/tests/fmm_ranks_threads.cpp: N ranks = one process; an evaluator making its own lists = the plain ranks', () => {
    const r = spawnSync(hostTest('amrgrav_fmm_ranks_threads'), [], { encoding: 'utf8', timeout: 600_000 });
    expect(r.stdout).toMatch(/PASS amr-periodic-empty-rank-3:/);
    expect(r.stdout).toMatch(/PASS amr-isolated-scattered-2-makes-lists: the plain ranks' results bit for bit/);
    expect(r.stdout).toMatch(/PASS amr-periodic-slabs-3-makes-lists: the plain ranks' results bit for bit/);
    expect(r.stdout).toMatch(/22 checks, 0 failed/);
    expect(r.status).toBe(0);
  });

  it('native/tests/shared_top.cpp: the shared top and every rank\'s tree = the one-process octree', () => {
    const r = spawnSync(hostTest('amrgrav_shared_top'), [], { encoding: 'utf8', timeout: 300_000 });
    expect(r.stdout).toMatch(/checks, 0 failed/);
    expect(r.status).toBe(0);
  });
});
