/**
 * Morton (Z-order) comparison of non-negative integer coordinates below 2^31, without forming the key: the
 * axis whose coordinates differ in the highest bit decides (Chan's most-significant-bit trick). Bits interleave
 * as ... z1 y1 x1 z0 y0 x0, matching the child order i + 2j + 4k, so z wins ties.
 */
import type { Vec3 } from './types.js';

/** True when the highest set bit of a is below that of b. */
function lessMsb(a: number, b: number): boolean {
  return a < b && a < (a ^ b);
}

/** Negative if a precedes b on the Morton curve, positive if it follows, 0 if equal. */
export function compareMorton(a: Readonly<Vec3>, b: Readonly<Vec3>): number {
  let axis = 2;
  let diff = a[2] ^ b[2];
  for (let d = 1; d >= 0; d--) {
    const x = a[d] ^ b[d];
    if (lessMsb(diff, x)) {
      axis = d;
      diff = x;
    }
  }
  return a[axis] - b[axis];
}
