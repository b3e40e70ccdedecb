/**
 * Uniform n^3 grids of cells over the unit cube, built directly as plain arrays (no mesh), for benchmarks and
 * tests where input set-up must not dominate.
 */
export interface GridCells {
  x: Float64Array;
  y: Float64Array;
  z: Float64Array;
  mass: Float64Array;
  size: Float64Array;
}

/** Cells of side 1/n with mass rho(centre) * volume, x fastest. */
export function gridCells(n: number, rho: (x: number, y: number, z: number) => number): GridCells {
  const N = n * n * n;
  const c: GridCells = {
    x: new Float64Array(N),
    y: new Float64Array(N),
    z: new Float64Array(N),
    mass: new Float64Array(N),
    size: new Float64Array(N).fill(1 / n),
  };
  const h = 1 / n;
  let p = 0;
  for (let k = 0; k < n; k++)
    for (let j = 0; j < n; j++)
      for (let i = 0; i < n; i++) {
        c.x[p] = (i + 0.5) * h;
        c.y[p] = (j + 0.5) * h;
        c.z[p] = (k + 0.5) * h;
        c.mass[p] = rho(c.x[p], c.y[p], c.z[p]) * h * h * h;
        p++;
      }
  return c;
}

/** The bench's default density: smooth, positive, contrast 3, so centres of mass sit off geometric centres. */
export function benchDensity(x: number, y: number, z: number): number {
  return 1 + 0.5 * Math.sin(2 * Math.PI * x) * Math.cos(2 * Math.PI * y) * (1 + z);
}

/**
 * nx x ny x nz cubic cells of side h = L[0] / n[0] over the box [0, L) (x fastest), mass rho(centre, index) h^3: the
 * periodic and sheet tests' boxes and the tall-box bench.
 */
export function boxGridCells(
  n: [number, number, number],
  L: [number, number, number],
  rho: (x: number, y: number, z: number, i: number) => number,
): GridCells {
  const h = L[0] / n[0], N = n[0] * n[1] * n[2];
  const c: GridCells = { x: new Float64Array(N), y: new Float64Array(N), z: new Float64Array(N), mass: new Float64Array(N),
    size: new Float64Array(N).fill(h) };
  let i = 0;
  for (let k = 0; k < n[2]; k++)
    for (let j = 0; j < n[1]; j++)
      for (let q = 0; q < n[0]; q++, i++) {
        c.x[i] = (q + 0.5) * h; c.y[i] = (j + 0.5) * h; c.z[i] = (k + 0.5) * h;
        c.mass[i] = rho(c.x[i], c.y[i], c.z[i], i) * h ** 3;
      }
  return c;
}
