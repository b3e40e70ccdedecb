/**
 * The ellipsoidal coordinate lambda of an exterior point: the largest root of
 *   F(lambda) = x^2/(a1^2+lambda) + y^2/(a2^2+lambda) + z^2/(a3^2+lambda) - 1 = 0,
 * i.e. the confocal ellipsoid through (x, y, z) (Chandrasekhar 1969, "Ellipsoidal Figures of Equilibrium", ch. 3).
 * Returns 0 for points inside or on the ellipsoid, where the potential integrals start at u = 0.
 */
export function confocalLambda(a1: number, a2: number, a3: number, x: number, y: number, z: number): number {
  const s1 = a1 * a1, s2 = a2 * a2, s3 = a3 * a3;
  const x2 = x * x, y2 = y * y, z2 = z * z;
  const F = (l: number) => x2 / (s1 + l) + y2 / (s2 + l) + z2 / (s3 + l) - 1;
  const dF = (l: number) => -(x2 / ((s1 + l) * (s1 + l)) + y2 / ((s2 + l) * (s2 + l)) + z2 / ((s3 + l) * (s3 + l)));
  if (F(0) <= 0) return 0;

  // F is decreasing and convex in lambda; sum x_i^2/(a_i^2+l) lies between r^2/(amax^2+l) and r^2/(amin^2+l),
  // so the root is bracketed by r^2 - amax^2 and r^2 - amin^2.
  const r2 = x2 + y2 + z2;
  let lo = Math.max(0, r2 - Math.max(s1, s2, s3));
  let hi = Math.max(0, r2 - Math.min(s1, s2, s3));
  if (F(hi) > 0) return hi; // root within rounding of hi
  // Safeguarded Newton (bisection whenever Newton leaves the bracket or stalls); from the left, Newton on a convex
  // decreasing function approaches the root monotonically, so this converges quadratically once close.
  let l = lo;
  let stepOld = hi - lo;
  for (let it = 0; it < 300; it++) {
    const f = F(l);
    if (f > 0) lo = l;
    else if (f < 0) hi = l;
    else return l;
    let next = l - f / dF(l);
    if (!(next > lo && next < hi) || Math.abs(next - l) > 0.5 * stepOld) next = 0.5 * (lo + hi);
    stepOld = Math.abs(next - l);
    l = next;
    if (stepOld <= 2 * Number.EPSILON * l || hi - lo <= 2 * Number.EPSILON * hi) return l;
  }
  return l;
}
