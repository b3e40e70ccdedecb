/**
 * Random AMR-like cells for accuracy tests of the far field: 8^3-cell blocks over the unit box, the root blocks
 * refined into 8 at random up to `levels` more levels, density random times 4^level (denser where finer, as in a
 * collapse), so that coarse cells sit beside much denser fine regions: the hard case for a relative error bound.
 */
import { rng } from './random.js';

export interface RandomAmrOptions {
  /** Root blocks per axis. Default 2. */
  rootBlocks?: number;
  /** Most refinements below the root blocks. Default 3. */
  levels?: number;
  /** Probability that a block is refined. Default 0.3. */
  refineProbability?: number;
  seed?: number;
}

export interface AmrCells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
  count: number;
}

export function randomAmrCells(opts: RandomAmrOptions = {}): AmrCells {
  const nb = opts.rootBlocks ?? 2;
  const levels = opts.levels ?? 3;
  const pr = opts.refineProbability ?? 0.3;
  const u = rng(opts.seed ?? 1);
  const blocks: { lo: [number, number, number]; side: number; level: number }[] = [];
  const stack: typeof blocks = [];
  for (let k = 0; k < nb; k++)
    for (let j = 0; j < nb; j++) for (let i = 0; i < nb; i++) stack.push({ lo: [i / nb, j / nb, k / nb], side: 1 / nb, level: 0 });
  while (stack.length) {
    const b = stack.pop()!;
    if (b.level < levels && u() < pr) {
      const s = b.side / 2;
      for (let o = 0; o < 8; o++)
        stack.push({ lo: [b.lo[0] + s * (o & 1), b.lo[1] + s * ((o >> 1) & 1), b.lo[2] + s * (o >> 2)], side: s, level: b.level + 1 });
    } else blocks.push(b);
  }
  const n = blocks.length * 512;
  const c: AmrCells = {
    x: new Float64Array(n),
    y: new Float64Array(n),
    z: new Float64Array(n),
    mass: new Float64Array(n),
    size: new Float64Array(n),
    count: n,
  };
  let q = 0;
  for (const b of blocks) {
    const h = b.side / 8;
    const boost = 4 ** b.level;
    for (let k = 0; k < 8; k++)
      for (let j = 0; j < 8; j++)
        for (let i = 0; i < 8; i++, q++) {
          c.x[q] = b.lo[0] + (i + 0.5) * h;
          c.y[q] = b.lo[1] + (j + 0.5) * h;
          c.z[q] = b.lo[2] + (k + 0.5) * h;
          c.mass[q] = u() * boost * h * h * h;
          c.size[q] = h;
        }
  }
  return c;
}
