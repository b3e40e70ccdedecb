/**
 * Carlson's symmetric elliptic integrals R_F and R_D by duplication (Carlson 1995, Numer. Algorithms 10, 13;
 * as in Numerical Recipes 3rd ed., sect. 6.12). They give the ellipsoid integrals in closed form,
 *   Int_lambda^inf du / Delta = 2 R_F(s1, s2, s3),
 *   Int_lambda^inf du / ((a_i^2+u) Delta) = (2/3) R_D(s_j, s_k, s_i),   s_i = a_i^2 + lambda,
 * and serve here as an independent check of the quadrature in ellipsoid.ts.
 */

/** R_F(x, y, z) = (1/2) Int_0^inf dt / sqrt((t+x)(t+y)(t+z)); x, y, z >= 0, at most one zero. */
export function carlsonRF(x: number, y: number, z: number): number {
  for (let it = 0; it < 100; it++) {
    const sx = Math.sqrt(x), sy = Math.sqrt(y), sz = Math.sqrt(z);
    const lam = sx * (sy + sz) + sy * sz;
    x = 0.25 * (x + lam);
    y = 0.25 * (y + lam);
    z = 0.25 * (z + lam);
    const ave = (x + y + z) / 3;
    const dx = (ave - x) / ave, dy = (ave - y) / ave, dz = (ave - z) / ave;
    if (Math.max(Math.abs(dx), Math.abs(dy), Math.abs(dz)) < 1e-3) {
      const e2 = dx * dy - dz * dz;
      const e3 = dx * dy * dz;
      return (1 + (e2 / 24 - 0.1 - (3 / 44) * e3) * e2 + e3 / 14) / Math.sqrt(ave);
    }
  }
  throw new Error('carlsonRF did not converge');
}

/** R_D(x, y, z) = (3/2) Int_0^inf dt / ((t+z)^{3/2} sqrt((t+x)(t+y))); x, y >= 0 (not both 0), z > 0. */
export function carlsonRD(x: number, y: number, z: number): number {
  let sum = 0;
  let fac = 1;
  for (let it = 0; it < 100; it++) {
    const sx = Math.sqrt(x), sy = Math.sqrt(y), sz = Math.sqrt(z);
    const lam = sx * (sy + sz) + sy * sz;
    sum += fac / (sz * (z + lam));
    fac *= 0.25;
    x = 0.25 * (x + lam);
    y = 0.25 * (y + lam);
    z = 0.25 * (z + lam);
    const ave = 0.2 * (x + y + 3 * z);
    const dx = (ave - x) / ave, dy = (ave - y) / ave, dz = (ave - z) / ave;
    if (Math.max(Math.abs(dx), Math.abs(dy), Math.abs(dz)) < 1e-3) {
      const C1 = 3 / 14, C2 = 1 / 6, C3 = 9 / 22, C4 = 3 / 26, C5 = 0.25 * C3, C6 = 1.5 * C4;
      const ea = dx * dy, eb = dz * dz, ec = ea - eb, ed = ea - 6 * eb, ee = ed + ec + ec;
      const series = 1 + ed * (-C1 + C5 * ed - C6 * dz * ee) + dz * (C2 * ee + dz * (-C3 * ec + dz * C4 * ea));
      return 3 * sum + (fac * series) / (ave * Math.sqrt(ave));
    }
  }
  throw new Error('carlsonRD did not converge');
}
