/**
 * Issue #21's sine check on one backend (the GPU's device-check step `contrast` runs it with cuda): rho0 (1 + A
 * sin(k.x)) on uniform n^3 grids of the unit box, centre-sampled, fully periodic, theta 0.5, order 2, for amplitudes
 * 1e-8 .. 1 along x and the diagonal. Prints one JSON line per case: the error relative to the perturbation's
 * analytic potential, the mean potential on the same scale, and (with --compare cpu) the largest difference from the
 * CPU backend's potential relative to the same scale.
 *
 *   node dist/bench/contrastSine.js [--backend cuda] [--n 32,64] [--compare cpu] [--no-contrast]
 */
import { parseArgs } from 'node:util';
import { GravitySolver } from '../solver/gravitySolver.js';

const { values } = parseArgs({
  options: {
    backend: { type: 'string', default: 'auto' },
    n: { type: 'string', default: '32,64' },
    compare: { type: 'string' },
    'no-contrast': { type: 'boolean', default: false },
  },
});
const G = 6.674e-8;
const backend = values.backend as 'auto' | 'cpu' | 'cuda';
const box = { box: { lo: [0, 0, 0] as [number, number, number], hi: [1, 1, 1] as [number, number, number] } };

for (const n of values.n!.split(',').map(Number)) {
  const N = n ** 3, h = 1 / n;
  const x = new Float64Array(N), y = new Float64Array(N), z = new Float64Array(N), size = new Float64Array(N).fill(h);
  for (let k = 0, i = 0; k < n; k++)
    for (let j = 0; j < n; j++)
      for (let q = 0; q < n; q++, i++) {
        x[i] = (q + 0.5) * h; y[i] = (j + 0.5) * h; z[i] = (k + 0.5) * h;
      }
  for (const direction of ['x', 'diagonal'] as const) {
    const kv = direction === 'x' ? [2 * Math.PI, 0, 0] : [2 * Math.PI, 2 * Math.PI, 2 * Math.PI];
    const k2 = kv[0] ** 2 + kv[1] ** 2 + kv[2] ** 2;
    for (const A of [1e-8, 1e-6, 1e-3, 1]) {
      const mass = new Float64Array(N);
      for (let i = 0; i < N; i++) mass[i] = (1 + A * Math.sin(kv[0] * x[i] + kv[1] * y[i] + kv[2] * z[i])) * h ** 3;
      const opts = { boundary: 'periodic', theta: 0.5, densityContrast: !values['no-contrast'] } as const;
      const r = await new GravitySolver({ ...opts, backend }).solveCells({ x, y, z, mass, size }, box);
      const amp = (4 * Math.PI * G * A) / k2;
      let err = 0;
      for (let i = 0; i < N; i++)
        err = Math.max(err, Math.abs(r.potential[i] + amp * Math.sin(kv[0] * x[i] + kv[1] * y[i] + kv[2] * z[i])));
      const out: Record<string, unknown> = {
        n, direction, A, backend: r.stats.backend, densityContrast: r.stats.densityContrast,
        error: err / amp, meanPotential: r.stats.meanPotential / amp, interactionsPerCell: r.stats.interactionsPerCell,
        seconds: r.stats.seconds.total,
      };
      if (values.compare) {
        const c = await new GravitySolver({ ...opts, backend: values.compare as 'cpu' }).solveCells({ x, y, z, mass, size }, box);
        let d = 0;
        for (let i = 0; i < N; i++) d = Math.max(d, Math.abs(c.potential[i] - r.potential[i]));
        out.vsCompare = d / amp;
        out.sameInteractions = c.stats.interactionsPerCell === r.stats.interactionsPerCell;
      }
      console.log(JSON.stringify(out));
    }
  }
}
