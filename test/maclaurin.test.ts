/**
 * MacLaurin-spheroid validation (the FLASH4 GPU tree-code paper's test) at the CI size, levels 5: the tree at
 * theta 0.5, order 2 is within 2x of the direct-summation error on the same mesh; the tree's own error (against
 * the direct sum) falls monotonically with theta; quadrupoles beat monopoles.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sweepMaclaurin, runMaclaurin, type MaclaurinReport } from '../validation/maclaurinRun.js';

describe('MacLaurin spheroid e = 0.9, levels 5', () => {
  let sweep: MaclaurinReport[];
  let monopole: MaclaurinReport[];
  beforeAll(async () => {
    sweep = await sweepMaclaurin({ levels: 5 });
    monopole = await sweepMaclaurin({ levels: 5, solver: { order: 1 } }, [1, 0.5]);
  });

  it('direct summation sets the discretisation floor, well below 1e-3', () => {
    const direct = sweep[sweep.length - 1];
    expect(direct.method).toBe('direct');
    expect(direct.maxRelError).toBeLessThan(1e-3);
    expect(direct.meanRelError).toBeLessThan(direct.maxRelError);
  });

  it('theta 0.5, order 2: max error within 2x of direct summation', () => {
    const tree = sweep.find((r) => r.theta === 0.5)!;
    const direct = sweep[sweep.length - 1];
    expect(tree.maxRelError).toBeLessThan(2 * direct.maxRelError);
  });

  it("the tree's error falls monotonically with theta", () => {
    const trees = sweep.filter((r) => r.method === 'tree');
    for (let i = 1; i < trees.length; i++) {
      expect(trees[i].theta!).toBeLessThan(trees[i - 1].theta!);
      expect(trees[i].treeVsDirectMaxRelError!).toBeLessThan(trees[i - 1].treeVsDirectMaxRelError!);
      expect(trees[i].treeVsDirectMeanRelError!).toBeLessThan(trees[i - 1].treeVsDirectMeanRelError!);
    }
    expect(trees[trees.length - 1].treeVsDirectMaxRelError!).toBeLessThan(1e-6); // theta 0.1 on the AMR mesh
  });

  it('order 2 is more accurate than order 1', () => {
    for (const theta of [1, 0.5]) {
      const q = sweep.find((r) => r.theta === theta)!;
      const m = monopole.find((r) => r.theta === theta)!;
      expect(q.treeVsDirectMaxRelError!).toBeLessThan(m.treeVsDirectMaxRelError!);
      expect(q.maxRelError).toBeLessThan(m.maxRelError);
    }
  });
});

describe("FLASH's own MacLaurin unit test (e = 0.5, a1 = 0.25, 2x2x2 sub-zones, 4 levels)", () => {
  it("passes far below FLASH's 1.5% tolerance", async () => {
    const r = await runMaclaurin({ levels: 4, e: 0.5, a1: 0.25, subsample: 2 });
    expect(r.maxRelError).toBeLessThan(0.015 / 5);
  });
});
