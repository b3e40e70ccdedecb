/**
 * Group-vote semantics: a node is accepted for a group only if it is acceptable for every cell of the group
 * (judged from the group's bounding box). Nested groups therefore see refinements of each other's lists.
 */
import { describe, expect, it } from 'vitest';
import { GravitySolver } from '../solver/gravitySolver.js';
import { clusteredCells, gridCells, relErrors } from './helpers.js';

describe.each([
  ['uniform grid', gridCells(24, (x) => 1 + 0.5 * Math.sin(6 * x))],
  ['clustered cells', clusteredCells(12000, 21)],
])('group vote on %s', (_name, cells) => {
  it('larger (nested) groups never accept a node a smaller group would open', async () => {
    const counts: number[] = [];
    for (const groupSize of [1, 4, 16, 32, 64]) {
      const r = await new GravitySolver({ G: 1, groupSize }).solveCells(cells);
      counts.push(r.stats.interactionsPerCell);
      // conservative acceptance only ever opens more nodes, so direct interactions grow too
    }
    for (let i = 1; i < counts.length; i++) expect(counts[i]).toBeGreaterThanOrEqual(counts[i - 1]);
    expect(counts[3]).toBeGreaterThan(counts[0]);
  });

  it('every group size meets the accuracy of per-cell acceptance', async () => {
    const ref = await new GravitySolver({ G: 1 }).directCells(cells);
    const single = relErrors((await new GravitySolver({ G: 1, groupSize: 1 }).solveCells(cells)).potential, ref.potential);
    for (const groupSize of [16, 32, 64]) {
      const e = relErrors((await new GravitySolver({ G: 1, groupSize }).solveCells(cells)).potential, ref.potential);
      expect(e.mean).toBeLessThanOrEqual(single.mean);
      expect(e.max).toBeLessThan(2 * single.max);
    }
  });
});
