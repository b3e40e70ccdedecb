/**
 * A small in-place radix-2 complex FFT and the spectral (FFT) solution of the fully periodic Poisson equation on
 * a uniform grid, the reference for a smooth multi-mode density.
 */

/** In-place FFT of (re, im) of length n (a power of two); inverse = true divides by n. */
export function fft1(re: Float64Array, im: Float64Array, inverse: boolean): void {
  const n = re.length;
  if (n & (n - 1)) throw new RangeError(`FFT length ${n} is not a power of two`);
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j], re[i]];
      [im[i], im[j]] = [im[j], im[i]];
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const ang = ((inverse ? 2 : -2) * Math.PI) / len;
    for (let i = 0; i < n; i += len)
      for (let k = 0; k < len / 2; k++) {
        const wr = Math.cos(ang * k);
        const wi = Math.sin(ang * k);
        const a = i + k;
        const b = a + len / 2;
        const xr = re[b] * wr - im[b] * wi;
        const xi = re[b] * wi + im[b] * wr;
        re[b] = re[a] - xr;
        im[b] = im[a] - xi;
        re[a] += xr;
        im[a] += xi;
      }
  }
  if (inverse) for (let i = 0; i < n; i++) { re[i] /= n; im[i] /= n; }
}

/** 3-D FFT of an n^3 array (x fastest), one axis at a time. */
export function fft3(re: Float64Array, im: Float64Array, n: number, inverse: boolean): void {
  const lr = new Float64Array(n);
  const li = new Float64Array(n);
  const strides = [1, n, n * n];
  for (const s of strides) {
    const others = strides.filter((t) => t !== s);
    for (let a = 0; a < n; a++)
      for (let b = 0; b < n; b++) {
        const base = a * others[0] + b * others[1];
        for (let i = 0; i < n; i++) { lr[i] = re[base + i * s]; li[i] = im[base + i * s]; }
        fft1(lr, li, inverse);
        for (let i = 0; i < n; i++) { re[base + i * s] = lr[i]; im[base + i * s] = li[i]; }
      }
  }
}

/**
 * Spectral solution of lap Phi = 4 pi G (rho - mean rho) on the periodic cube of side L sampled at n^3 points
 * (x fastest): Phi_k = -4 pi G rho_k / |k|^2, Phi_0 = 0 (zero mean).
 */
export function spectralPotential(rho: Float64Array, n: number, L: number, G: number): Float64Array {
  const re = Float64Array.from(rho);
  const im = new Float64Array(rho.length);
  fft3(re, im, n, false);
  const freq = (i: number) => ((2 * Math.PI) / L) * (i <= n / 2 ? i : i - n);
  for (let k = 0; k < n; k++)
    for (let j = 0; j < n; j++)
      for (let i = 0; i < n; i++) {
        const p = i + n * (j + n * k);
        const k2 = freq(i) ** 2 + freq(j) ** 2 + freq(k) ** 2;
        const f = k2 === 0 ? 0 : (-4 * Math.PI * G) / k2;
        re[p] *= f;
        im[p] *= f;
      }
  fft3(re, im, n, true);
  return re;
}
