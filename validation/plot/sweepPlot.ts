/**
 * \file sweepPlot.ts
 * \brief The MacLaurin theta sweep as a PNG (like Fig. 9 of the FLASH4 GPU tree-code paper): max and mean
 * relative error against the analytic potential vs theta on log axes, with the direct-summation floor.
 */
import type { MaclaurinReport } from '../maclaurinRun.js';
import { drawAxes, xPixel, yPixel, type Area } from './axes.js';
import { Canvas, type RGB } from './canvas.js';
import { logScale } from './scales.js';

const MAX: RGB = [200, 40, 40];
const MEAN: RGB = [40, 80, 200];
const TREE: RGB = [30, 150, 60];

/** Writes the sweep plot; `reports` as from sweepMaclaurin (tree runs, then the direct run). */
export async function plotSweep(reports: MaclaurinReport[], output: string): Promise<void> {
  const tree = reports.filter((r) => r.method === 'tree' && r.theta !== null).sort((a, b) => a.theta! - b.theta!);
  const direct = reports.find((r) => r.method === 'direct');
  if (tree.length === 0) throw new RangeError('plotSweep: no tree runs to plot');
  const errs = [
    ...tree.flatMap((r) => [r.maxRelError, r.meanRelError, r.treeVsDirectMaxRelError ?? 0]),
    ...(direct ? [direct.maxRelError, direct.meanRelError] : []),
  ].filter((e) => e > 0);
  const ys = logScale(Math.min(...errs) / 2, Math.max(...errs) * 2);
  const xs = logScale(Math.min(...tree.map((r) => r.theta!)) / 1.25, Math.max(...tree.map((r) => r.theta!)) * 1.25);
  const area: Area = { x: 130, y: 50, w: 560, h: 420 };
  const c = new Canvas(area.x + area.w + 40, area.y + area.h + 80);
  drawAxes(c, area, { ...xs, ticks: () => tree.map((r) => ({ value: r.theta!, label: String(r.theta) })) }, ys, 'THETA', 'RELATIVE ERROR', true);
  const series = (pick: (r: MaclaurinReport) => number, col: RGB) => {
    const pts = tree.map((r) => [xPixel(area, xs, r.theta!), yPixel(area, ys, pick(r))]);
    for (let i = 1; i < pts.length; i++) c.line(pts[i - 1][0], pts[i - 1][1], pts[i][0], pts[i][1], col, { width: 2 });
    for (const [x, y] of pts) c.fillRect(Math.round(x) - 4, Math.round(y) - 4, 9, 9, col);
  };
  series((r) => r.maxRelError, MAX);
  series((r) => r.meanRelError, MEAN);
  // the tree's own error (against direct summation on the same cells): what theta controls below the floor
  const vsDirect = tree.every((r) => (r.treeVsDirectMaxRelError ?? 0) > 0);
  if (vsDirect) series((r) => r.treeVsDirectMaxRelError!, TREE);
  if (direct) {
    for (const [v, col] of [[direct.maxRelError, MAX], [direct.meanRelError, MEAN]] as const) {
      const y = yPixel(area, ys, v);
      c.line(area.x, y, area.x + area.w - 1, y, col, { dash: [8, 6], width: 2 });
    }
  }
  const legend = [
    ['MAX VS ANALYTIC', MAX, false],
    ['MEAN VS ANALYTIC', MEAN, false],
    ['DIRECT SUM MAX (FLOOR)', MAX, true],
    ['DIRECT SUM MEAN (FLOOR)', MEAN, true],
    ['TREE VS DIRECT MAX', TREE, false],
  ] as const;
  const shown = legend.filter(([, col, dashed]) => !((dashed && !direct) || (col === TREE && !vsDirect)));
  // bottom right: the errors fall towards small theta, so that corner is empty
  const lx = area.x + area.w - 330;
  let ly = area.y + area.h - 22 * shown.length - 14;
  c.fillRect(lx - 8, ly - 8, 330, 22 * shown.length + 12, [255, 255, 255]);
  c.rect(lx - 8, ly - 8, lx + 320, ly + 22 * shown.length + 2, [120, 120, 120]);
  for (const [label, col, dashed] of shown) {
    c.line(lx, ly + 7, lx + 36, ly + 7, col, { width: 2, dash: dashed ? [8, 6] : undefined });
    c.text(label, lx + 46, ly);
    ly += 22;
  }
  const r0 = tree[0];
  c.text(`MACLAURIN E=${r0.e} A1=${r0.a1} LEVELS ${r0.levels} ${r0.cells} CELLS ORDER ${r0.order}`, 20, 14);
  await c.save(output);
}
