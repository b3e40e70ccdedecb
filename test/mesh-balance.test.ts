/** Leaf blocks tile the domain, follow the Morton curve, and satisfy 2:1 balance across faces, edges and corners. */
import { describe, expect, it } from 'vitest';
import { AmrMesh, balanceMesh, refineMesh, uniformMesh, type Vec3 } from '../mesh/index.js';

type Box = { lo: Readonly<Vec3>; hi: Readonly<Vec3> };

/** Closed boxes that share at least a point but no volume: a face, an edge or only a corner. */
function touching(a: Box, b: Box): boolean {
  let shared = 0;
  for (let d = 0; d < 3; d++) {
    if (a.lo[d] > b.hi[d] || b.lo[d] > a.hi[d]) return false;
    if (a.lo[d] === b.hi[d] || b.lo[d] === a.hi[d]) shared++;
  }
  return shared > 0;
}

function overlapVolume(a: Box, b: Box): number {
  let v = 1;
  for (let d = 0; d < 3; d++) v *= Math.max(0, Math.min(a.hi[d], b.hi[d]) - Math.max(a.lo[d], b.lo[d]));
  return v;
}

/** Every pair of touching leaves whose levels differ by more than one, found by brute force. */
function balanceViolations(mesh: AmrMesh): { a: number; b: number; kind: string }[] {
  const leaves = mesh.leafBlocks();
  const out: { a: number; b: number; kind: string }[] = [];
  for (let p = 0; p < leaves.length; p++)
    for (let q = p + 1; q < leaves.length; q++) {
      const A = mesh.block(leaves[p]);
      const B = mesh.block(leaves[q]);
      if (Math.abs(A.level - B.level) > 1 && touching(A, B)) {
        const flat = [0, 1, 2].filter((d) => A.lo[d] === B.hi[d] || B.lo[d] === A.hi[d]).length;
        out.push({ a: leaves[p], b: leaves[q], kind: ['', 'face', 'edge', 'corner'][flat] });
      }
    }
  return out;
}

/** Refines every leaf whose closed box contains the point, down to lrefineMax, then balances. */
function refineAt(mesh: AmrMesh, p: Vec3): void {
  refineMesh(mesh, (m, b) => [0, 1, 2].every((d) => m.block(b).lo[d] <= p[d] && p[d] <= m.block(b).hi[d]));
}

/** The Morton key computed independently, by interleaving bits into a BigInt (x lowest). */
function mortonKey(c: Readonly<Vec3>): bigint {
  let key = 0n;
  for (let bit = 0; bit < 31; bit++)
    for (let d = 0; d < 3; d++) if ((c[d] >> bit) & 1) key |= 1n << BigInt(3 * bit + d);
  return key;
}

describe('tiling', () => {
  it('leaves of a locally refined mesh cover the domain exactly once', () => {
    const mesh = new AmrMesh({ domainLo: [-1, -1, -1], domainHi: [1, 1, 1], lrefineMax: 4, nxb: 2, nyb: 2, nzb: 2 });
    refineAt(mesh, [0.3, -0.2, 0.55]);
    const leaves = mesh.leafBlocks();
    expect(new Set(leaves.map((b) => mesh.block(b).level))).toEqual(new Set([2, 3, 4]));
    let volume = 0;
    for (const b of leaves) {
      const { lo, hi } = mesh.block(b);
      volume += (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
    }
    expect(volume).toBe(8);
    let overlap = 0;
    for (let p = 0; p < leaves.length; p++)
      for (let q = p + 1; q < leaves.length; q++) overlap += overlapVolume(mesh.block(leaves[p]), mesh.block(leaves[q]));
    expect(overlap).toBe(0);
  });
});

describe('Morton order of leafBlocks', () => {
  it('on a uniform mesh it is the child order', () => {
    const mesh = uniformMesh({ lrefineMax: 2, level: 2 });
    expect(mesh.leafBlocks().map((b) => mesh.block(b).coord)).toEqual([
      [0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1],
    ]);
  });

  it('on an adaptive multi-root mesh, lower-corner keys at lrefineMax strictly increase', () => {
    const mesh = new AmrMesh({ domainHi: [3, 2, 1], rootBlocks: [3, 2, 1], lrefineMax: 5, nxb: 2, nyb: 2, nzb: 2 });
    refineAt(mesh, [1.3, 0.7, 0.2]);
    const keys = mesh.leafBlocks().map((b) => {
      const { level, coord } = mesh.block(b);
      const f = 2 ** (5 - level);
      return mortonKey([coord[0] * f, coord[1] * f, coord[2] * f]);
    });
    expect(keys.length).toBeGreaterThan(100);
    for (let i = 1; i < keys.length; i++) expect(keys[i] > keys[i - 1]).toBe(true);
  });
});

describe('2:1 balance', () => {
  it.each<[string, Vec3]>([
    ['the domain centre (a corner of blocks at every level)', [0.5, 0.5, 0.5]],
    ['a level-3 block corner', [0.25, 0.75, 0.5]],
    ['a domain corner', [0, 0, 0]],
    ['a generic point', [0.61, 0.13, 0.87]],
  ])('holds for every touching leaf pair after refining %s to lrefineMax', (_name, p) => {
    const mesh = new AmrMesh({ lrefineMax: 5, nxb: 2, nyb: 2, nzb: 2 });
    refineAt(mesh, p);
    const levels = mesh.leafBlocks().map((b) => mesh.block(b).level);
    expect(Math.max(...levels)).toBe(5);
    expect(balanceViolations(mesh)).toEqual([]);
  });

  it('refines a coarse leaf that touches a fine one only at a corner', () => {
    // 2x2x2 root blocks; refine all but the (1,1,1) root, then the corner of the (0,0,0) root once more: its
    // level-3 blocks meet the level-1 root (1,1,1) only at the point (1,1,1).
    const mesh = new AmrMesh({ domainHi: [2, 2, 2], rootBlocks: [2, 2, 2], lrefineMax: 3, nxb: 2, nyb: 2, nzb: 2 });
    for (let b = 0; b < 7; b++) mesh.refineBlock(b);
    mesh.refineBlock(mesh.block(0).children[7]);
    const before = balanceViolations(mesh);
    expect(before).toHaveLength(1);
    expect(before[0].kind).toBe('corner');
    expect([before[0].a, before[0].b]).toContain(7);

    balanceMesh(mesh);
    expect(mesh.isLeaf(7)).toBe(false);
    expect(balanceViolations(mesh)).toEqual([]);
    // nothing else needed refining
    expect(mesh.blockCount).toBe(8 + 8 * 8 + 8);
  });

  it('refineMesh stops at lrefineMax even if the predicate always says yes', () => {
    const mesh = refineMesh(new AmrMesh({ lrefineMax: 3, nxb: 2, nyb: 2, nzb: 2 }), () => true);
    expect(mesh.leafBlocks()).toHaveLength(64);
  });

  it('handles ~20k blocks (a refined spherical shell)', () => {
    const mesh = new AmrMesh({ domainLo: [-1, -1, -1], domainHi: [1, 1, 1], rootBlocks: [2, 2, 2], lrefineMax: 6, nxb: 2, nyb: 2, nzb: 2 });
    // refine blocks cut by the sphere r = 0.7
    refineMesh(mesh, (m, b) => {
      const { lo, hi } = m.block(b);
      let near = 0;
      let far = 0;
      for (let d = 0; d < 3; d++) {
        const c = Math.max(lo[d], Math.min(0, hi[d]));
        near += c * c;
        far += Math.max(lo[d] * lo[d], hi[d] * hi[d]);
      }
      return near <= 0.49 && far >= 0.49;
    });
    expect(mesh.blockCount).toBeGreaterThan(15_000);
    // too many leaves for the brute force: each leaf's 26 same-level neighbour positions must lie in a block at
    // most one level coarser, i.e. the block one level up at that position must exist
    let violations = 0;
    for (const b of mesh.leafBlocks()) {
      const { level, coord } = mesh.block(b);
      const n = mesh.blocksPerAxis(level);
      for (let dk = -1; dk <= 1; dk++)
        for (let dj = -1; dj <= 1; dj++)
          for (let di = -1; di <= 1; di++) {
            const at: Vec3 = [coord[0] + di, coord[1] + dj, coord[2] + dk];
            if (at.some((c, d) => c < 0 || c >= n[d])) continue;
            if (level > 1 && mesh.findBlock(level - 1, [at[0] >> 1, at[1] >> 1, at[2] >> 1]) < 0) violations++;
          }
    }
    expect(violations).toBe(0);
  });
});
