/**
 * Adaptive Gauss-Legendre quadrature on a finite interval, used to evaluate the ellipsoid integrals to near machine
 * precision. Error control compares the n-point rule on an interval with the sum over its two halves; for the smooth
 * integrands used here the accepted (halved) value is far more accurate than that difference, so the result is
 * typically good to a few ulps of the total.
 */

const ORDER = 20;

/** Nodes and weights of the n-point Gauss-Legendre rule on [-1, 1], by Newton iteration on P_n. */
export function gaussLegendreRule(n: number): { nodes: Float64Array; weights: Float64Array } {
  const nodes = new Float64Array(n);
  const weights = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let x = Math.cos((Math.PI * (i + 0.75)) / (n + 0.5));
    let dp = 0;
    for (let it = 0; it < 100; it++) {
      // P_n(x) and P_n'(x) by the three-term recurrence
      let p0 = 1;
      let p1 = x;
      for (let k = 2; k <= n; k++) {
        const p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      dp = (n * (x * p1 - p0)) / (x * x - 1);
      const dx = p1 / dp;
      x -= dx;
      if (Math.abs(dx) < 1e-16) break;
    }
    nodes[i] = x;
    weights[i] = 2 / ((1 - x * x) * dp * dp);
  }
  return { nodes, weights };
}

const RULE = gaussLegendreRule(ORDER);

function gl(f: (t: number) => number, a: number, b: number): number {
  const m = 0.5 * (a + b);
  const r = 0.5 * (b - a);
  let s = 0;
  for (let i = 0; i < ORDER; i++) s += RULE.weights[i] * f(m + r * RULE.nodes[i]);
  return s * r;
}

export interface AdaptiveOptions {
  /** Target error relative to the magnitude of the integral. Default 1e-13 (actual errors are far smaller). */
  relTol?: number;
  /** Uniform pieces the interval is split into before adapting, so narrow features are not missed. Default 8. */
  initialPieces?: number;
  /** Bisection depth at which refinement gives up with an error. Default 40. */
  maxDepth?: number;
}

/** Integral of f over [a, b] (finite), adaptively bisected until the halved and whole rules agree. */
export function integrateAdaptive(f: (t: number) => number, a: number, b: number, opts: AdaptiveOptions = {}): number {
  const relTol = opts.relTol ?? 1e-13;
  const pieces = opts.initialPieces ?? 8;
  const maxDepth = opts.maxDepth ?? 40;
  const edges: number[] = [];
  for (let i = 0; i <= pieces; i++) edges.push(a + ((b - a) * i) / pieces);
  const coarse = edges.slice(0, pieces).map((lo, i) => gl(f, lo, edges[i + 1]));
  let magnitude = 0;
  for (const c of coarse) magnitude += Math.abs(c);
  const tolAbs = relTol * magnitude;

  const refine = (lo: number, hi: number, whole: number, depth: number): number => {
    const mid = 0.5 * (lo + hi);
    const left = gl(f, lo, mid);
    const right = gl(f, mid, hi);
    const halves = left + right;
    if (!Number.isFinite(halves)) throw new RangeError(`integrand not finite on [${lo}, ${hi}]`);
    if (Math.abs(halves - whole) <= tolAbs) return halves;
    if (depth >= maxDepth) throw new Error(`adaptive quadrature did not converge on [${lo}, ${hi}]`);
    return refine(lo, mid, left, depth + 1) + refine(mid, hi, right, depth + 1);
  };

  let sum = 0;
  for (let i = 0; i < pieces; i++) sum += refine(edges[i], edges[i + 1], coarse[i], 0);
  return sum;
}
