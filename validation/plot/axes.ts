/**
 * \file axes.ts
 * \brief Axes for plots: a frame around the plot area, ticks and tick labels from {@link Scale}s, axis titles,
 * and a vertical colour bar.
 */
import type { Canvas, RGB } from './canvas.js';
import { viridis, type Scale } from './scales.js';

/** The plot area in pixels: left, top, width, height. */
export interface Area {
  x: number;
  y: number;
  w: number;
  h: number;
}

const BLACK: RGB = [0, 0, 0];
const TICK = 6;

/** Pixel column of a value on a horizontal scale / row on a vertical one (up is larger). */
export function xPixel(a: Area, s: Scale, v: number): number {
  return a.x + s.frac(v) * (a.w - 1);
}
export function yPixel(a: Area, s: Scale, v: number): number {
  return a.y + (1 - s.frac(v)) * (a.h - 1);
}

/** Frame, ticks with labels on the bottom and left, and the axis titles. */
export function drawAxes(c: Canvas, a: Area, xs: Scale, ys: Scale, xTitle: string, yTitle: string, grid = false): void {
  for (const t of xs.ticks()) {
    const x = xPixel(a, xs, t.value);
    if (grid) c.line(x, a.y, x, a.y + a.h - 1, [200, 200, 200], { dash: [2, 3] });
    c.line(x, a.y + a.h - 1, x, a.y + a.h - 1 + TICK, BLACK);
    c.text(t.label, x, a.y + a.h + TICK + 4, { align: 'center' });
  }
  for (const t of ys.ticks()) {
    const y = yPixel(a, ys, t.value);
    if (grid) c.line(a.x, y, a.x + a.w - 1, y, [200, 200, 200], { dash: [2, 3] });
    c.line(a.x - TICK, y, a.x, y, BLACK);
    c.text(t.label, a.x - TICK - 4, y - 7, { align: 'right' });
  }
  c.rect(a.x - 1, a.y - 1, a.x + a.w, a.y + a.h, BLACK);
  c.text(xTitle, a.x + a.w / 2, a.y + a.h + TICK + 26, { align: 'center' });
  c.text(yTitle, a.x - 92, a.y + a.h / 2, { align: 'center', vertical: true });
}

/** A vertical viridis colour bar at `a`, ticks and labels on its right, title above. */
export function drawColourBar(c: Canvas, a: Area, s: Scale, title: string): void {
  for (let y = 0; y < a.h; y++) {
    const col = viridis(1 - y / (a.h - 1));
    c.fillRect(a.x, a.y + y, a.w, 1, col);
  }
  c.rect(a.x - 1, a.y - 1, a.x + a.w, a.y + a.h, BLACK);
  for (const t of s.ticks()) {
    const y = yPixel(a, s, t.value);
    c.line(a.x + a.w, y, a.x + a.w + TICK, y, BLACK);
    c.text(t.label, a.x + a.w + TICK + 4, y - 7);
  }
  c.text(title, a.x + a.w / 2, a.y - 24, { align: 'center' });
}
