/**
 * Error metrics of a numerical potential against a reference, per cell: |phi - phi_ref| / |phi_ref|.
 */
export interface ErrorStats {
  maxRelError: number;
  meanRelError: number;
  /** Index of the cell with the largest error. */
  worstCell: number;
}

export function relativeErrorStats(phi: ArrayLike<number>, ref: ArrayLike<number>): ErrorStats {
  if (phi.length !== ref.length) throw new RangeError(`length mismatch: ${phi.length} values vs ${ref.length} references`);
  let max = 0;
  let sum = 0;
  let worst = -1;
  for (let i = 0; i < ref.length; i++) {
    const e = Math.abs(phi[i] - ref[i]) / Math.abs(ref[i]);
    sum += e;
    if (e > max || worst < 0) {
      max = e;
      worst = i;
    }
  }
  return { maxRelError: max, meanRelError: ref.length ? sum / ref.length : 0, worstCell: worst };
}
