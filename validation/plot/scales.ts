/**
 * \file scales.ts
 * \brief Colour map (viridis) and axis scales: linear and log mappings with "nice" tick values and labels.
 */
import type { RGB } from './canvas.js';

/** matplotlib's viridis sampled at 0, 0.1, ..., 1; interpolated linearly between samples. */
const VIRIDIS: RGB[] = [
  [0x44, 0x01, 0x54], [0x48, 0x24, 0x75], [0x41, 0x44, 0x87], [0x35, 0x5f, 0x8d], [0x2a, 0x78, 0x8e], [0x21, 0x91, 0x8c],
  [0x22, 0xa8, 0x84], [0x44, 0xbf, 0x70], [0x7a, 0xd1, 0x51], [0xbd, 0xdf, 0x26], [0xfd, 0xe7, 0x25],
];

/** Viridis colour of t in [0, 1] (clamped). */
export function viridis(t: number): RGB {
  const u = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(u));
  const f = u - i;
  return [0, 1, 2].map((k) => Math.round(VIRIDIS[i][k] * (1 - f) + VIRIDIS[i + 1][k] * f)) as RGB;
}

export interface Scale {
  /** Value -> fraction in [0, 1] of the axis. */
  frac(v: number): number;
  ticks(): { value: number; label: string }[];
  log: boolean;
  min: number;
  max: number;
}

/** Short tick label: 0.25, 1.5e-3, 1e5. */
export function tickLabel(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e-2 && a < 1e4) return String(Number(v.toPrecision(3)));
  const [m, e] = v.toExponential(2).split('e');
  return `${String(Number(m))}e${Number(e)}`;
}

/** Linear scale with about `count` nice ticks (steps 1, 2, 5 x 10^k). */
export function linearScale(min: number, max: number, count = 6): Scale {
  if (!(max > min)) max = min + (Math.abs(min) || 1) * 1e-6;
  const raw = (max - min) / count;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  return {
    log: false,
    min,
    max,
    frac: (v) => (v - min) / (max - min),
    ticks: () => {
      const out: { value: number; label: string }[] = [];
      for (let v = Math.ceil(min / step - 1e-9) * step; v <= max + step * 1e-9; v += step) out.push({ value: v, label: tickLabel(Math.abs(v) < step * 1e-9 ? 0 : v) });
      return out;
    },
  };
}

/** Log10 scale with ticks at decades (every k-th decade when there are many). */
export function logScale(min: number, max: number): Scale {
  if (!(min > 0)) min = max > 0 ? max * 1e-6 : 1e-300;
  if (!(max > min)) max = min * 10;
  const l0 = Math.log10(min);
  const l1 = Math.log10(max);
  return {
    log: true,
    min,
    max,
    frac: (v) => (v > 0 ? (Math.log10(v) - l0) / (l1 - l0) : 0),
    ticks: () => {
      const d0 = Math.ceil(l0 - 1e-9);
      const d1 = Math.floor(l1 + 1e-9);
      const every = Math.max(1, Math.ceil((d1 - d0 + 1) / 8));
      const out: { value: number; label: string }[] = [];
      for (let d = d0; d <= d1; d += every) out.push({ value: 10 ** d, label: `1e${d}` });
      if (out.length >= 3) return out;
      // a range of one or two decades: ticks at 1, 2 and 5 times each power of ten
      const fine: { value: number; label: string }[] = [];
      for (let d = Math.floor(l0); d <= Math.ceil(l1); d++)
        for (const m of [1, 2, 5]) {
          const v = m * 10 ** d;
          if (v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9)) fine.push({ value: v, label: tickLabel(Number(v.toPrecision(1))) });
        }
      return fine.length >= 2 ? fine : [{ value: min, label: tickLabel(min) }, { value: max, label: tickLabel(max) }];
    },
  };
}
