/**
 * \file slicePlot.ts
 * \brief A slice through a FLASH file as a PNG (like Fig. 8 of the FLASH4 GPU tree-code paper): each pixel takes
 * the value of the leaf cell under it, coloured with viridis, with a colour bar, axes in cm and the outlines of
 * the leaf blocks cut by the slice. 'relerr' compares gpot with the analytic potential the file records.
 */
import { MeshError } from '../../mesh/errors.js';
import { checkOutputPath } from '../../mesh/outputFile.js';
import { FLASH_LEAF, type FlashData } from '../../mesh/flashFormat.js';
import { readFlashFile } from '../../mesh/flashRead.js';
import { analyticPotentialOf } from '../problemFiles.js';
import { drawAxes, drawColourBar, type Area } from './axes.js';
import { Canvas } from './canvas.js';
import { linearScale, logScale, viridis } from './scales.js';

export interface SlicePlotOptions {
  /** Variable to show, or 'relerr' (|gpot - phi_analytic| / |phi_analytic|). Default 'gpot'. */
  variable?: string;
  /** Slice plane: the axis normal to it and its coordinate in cm (default: the domain centre). Default z. */
  slice?: { axis: 'x' | 'y' | 'z'; at?: number };
  /** Logarithmic colour scale (of |value|). Default false. */
  log?: boolean;
  /** Draw the outlines of the leaf blocks. Default true. */
  blocks?: boolean;
  /** Longest side of the image area, pixels. Default 560. */
  size?: number;
}

export interface SlicePlotReport {
  input: string;
  output: string;
  variable: string;
  axis: string;
  at: number;
  width: number;
  height: number;
  /** Colour range of the shown values. */
  min: number;
  max: number;
  /** Leaf blocks cut by the slice. */
  blocksCut: number;
}

const UNITS: Record<string, string> = { gpot: 'ERG/G', dens: 'G/CM^3', relerr: '', gacx: 'CM/S^2', gacy: 'CM/S^2', gacz: 'CM/S^2' };

/** Per-pixel values of a slice: NaN where no leaf block covers the pixel. */
function sampleSlice(d: FlashData, values: (b: number, cell: number, x: number, y: number, z: number) => number, axis: number, at: number, lo: number[], hi: number[], nu: number, nv: number) {
  const [ua, va] = [0, 1, 2].filter((a) => a !== axis);
  const n = [d.nxb, d.nyb, d.nzb];
  const img = new Float64Array(nu * nv).fill(NaN);
  const cut: number[] = [];
  const du = (hi[ua] - lo[ua]) / nu;
  const dv = (hi[va] - lo[va]) / nv;
  for (let b = 0; b < d.blockCount; b++) {
    if (d.nodeType[b] !== FLASH_LEAF) continue;
    const bb = (a: number, s: number) => d.boundingBox[b * 6 + 2 * a + s];
    // half-open blocks, except that the domain's upper face belongs to the last block
    const inside = at >= bb(axis, 0) && (at < bb(axis, 1) || (at === hi[axis] && bb(axis, 1) >= hi[axis]));
    if (!inside) continue;
    cut.push(b);
    const h = [0, 1, 2].map((a) => (bb(a, 1) - bb(a, 0)) / n[a]);
    const k = Math.min(n[axis] - 1, Math.floor((at - bb(axis, 0)) / h[axis]));
    const p0 = Math.max(0, Math.floor((bb(ua, 0) - lo[ua]) / du));
    const p1 = Math.min(nu, Math.ceil((bb(ua, 1) - lo[ua]) / du));
    const q0 = Math.max(0, Math.floor((bb(va, 0) - lo[va]) / dv));
    const q1 = Math.min(nv, Math.ceil((bb(va, 1) - lo[va]) / dv));
    for (let q = q0; q < q1; q++) {
      const v = lo[va] + (q + 0.5) * dv;
      const j = Math.floor((v - bb(va, 0)) / h[va]);
      if (j < 0 || j >= n[va]) continue;
      for (let p = p0; p < p1; p++) {
        const u = lo[ua] + (p + 0.5) * du;
        const i = Math.floor((u - bb(ua, 0)) / h[ua]);
        if (i < 0 || i >= n[ua]) continue;
        const idx = [0, 0, 0];
        idx[axis] = k;
        idx[ua] = i;
        idx[va] = j;
        const centre = idx.map((c, a) => bb(a, 0) + (c + 0.5) * h[a]);
        img[q * nu + p] = values(b, (idx[2] * d.nyb + idx[1]) * d.nxb + idx[0], centre[0], centre[1], centre[2]);
      }
    }
  }
  return { img, cut, ua, va };
}

/**
 * Reads `input` and writes a slice of `variable` to the PNG `output`.
 * @throws OutputFileError 'OUTPUT_IS_INPUT', 'OUTPUT_NOT_REGULAR', 'WRITE_FAILED' for the output;
 *   MeshError 'UNKNOWN_VARIABLE' for a variable the file lacks (or relerr without gpot or without a
 *   recorded problem), 'INVALID_OPTION' for a slice outside the domain; the errors of readFlashFile.
 */
export async function plotSliceFile(input: string, output: string, opts: SlicePlotOptions = {}): Promise<SlicePlotReport> {
  checkOutputPath(output, [input]); // before reading: refuse writing over the input or a device, FIFO, directory
  const variable = opts.variable ?? 'gpot';
  const relerr = variable === 'relerr';
  const d = await readFlashFile(input, { variables: [relerr ? 'gpot' : variable] });
  const analytic = relerr ? analyticPotentialOf(d.params) : null;
  if (relerr && !analytic) {
    throw new MeshError('UNKNOWN_VARIABLE', `${input}: relerr needs a file made by 'amrgrav make maclaurin|sphere' (it records the analytic problem); this one records none`);
  }
  const axisName = opts.slice?.axis ?? 'z';
  const axis = 'xyz'.indexOf(axisName);
  const rt = d.params.realRuntime;
  const lo = [0, 1, 2].map((a) => rt.get(`${'xyz'[a]}min`) ?? Math.min(...Array.from({ length: d.blockCount }, (_, b) => d.boundingBox[b * 6 + 2 * a])));
  const hi = [0, 1, 2].map((a) => rt.get(`${'xyz'[a]}max`) ?? Math.max(...Array.from({ length: d.blockCount }, (_, b) => d.boundingBox[b * 6 + 2 * a + 1])));
  const at = opts.slice?.at ?? 0.5 * (lo[axis] + hi[axis]);
  if (!(at >= lo[axis] && at <= hi[axis])) {
    throw new MeshError('INVALID_OPTION', `slice ${axisName}=${at} lies outside the domain [${lo[axis]}, ${hi[axis]}] cm`);
  }
  const [ua, va] = [0, 1, 2].filter((a) => a !== axis);
  const size = opts.size ?? 560;
  const ext = [hi[ua] - lo[ua], hi[va] - lo[va]];
  const nu = Math.max(16, Math.round((size * ext[0]) / Math.max(...ext)));
  const nv = Math.max(16, Math.round((size * ext[1]) / Math.max(...ext)));
  const field = d.variables.get(relerr ? 'gpot' : variable)!;
  const cpb = d.nxb * d.nyb * d.nzb;
  const value = relerr
    ? (b: number, c: number, x: number, y: number, z: number) => {
        const ref = analytic!(x, y, z);
        return Math.abs(field[b * cpb + c] - ref) / Math.abs(ref);
      }
    : (b: number, c: number) => field[b * cpb + c];
  const { img, cut } = sampleSlice(d, value, axis, at, lo, hi, nu, nv);

  const log = opts.log ?? false;
  let min = Infinity;
  let max = -Infinity;
  for (const v of img) {
    const w = log ? Math.abs(v) : v;
    if (!Number.isFinite(w) || (log && w <= 0)) continue;
    min = Math.min(min, w);
    max = Math.max(max, w);
  }
  if (!Number.isFinite(min)) [min, max] = [0, 1];
  const cs = log ? logScale(min, max) : linearScale(min, max);

  const area: Area = { x: 120, y: 50, w: nu, h: nv };
  const c = new Canvas(area.x + nu + 190, area.y + nv + 80);
  for (let q = 0; q < nv; q++)
    for (let p = 0; p < nu; p++) {
      const v = img[q * nu + p];
      // rows go up: v increases towards the top of the image
      c.set(area.x + p, area.y + nv - 1 - q, Number.isFinite(v) ? viridis(cs.frac(log ? Math.abs(v) : v)) : [255, 255, 255]);
    }
  if (opts.blocks ?? true) {
    for (const b of cut) {
      const px = (a: number, s: number) => (d.boundingBox[b * 6 + 2 * a + s] - lo[a]) / (hi[a] - lo[a]);
      const x0 = area.x + px(ua, 0) * nu;
      const x1 = area.x + px(ua, 1) * nu;
      const y0 = area.y + nv - px(va, 1) * nv;
      const y1 = area.y + nv - px(va, 0) * nv;
      c.rect(Math.round(x0), Math.round(y0), Math.round(x1) - 1, Math.round(y1) - 1, [255, 255, 255], 0.45);
    }
  }
  const axisNames = ['X', 'Y', 'Z'];
  drawAxes(c, area, linearScale(lo[ua], hi[ua]), linearScale(lo[va], hi[va]), `${axisNames[ua]} (CM)`, `${axisNames[va]} (CM)`);
  const unit = UNITS[variable] ?? '';
  drawColourBar(c, { x: area.x + nu + 30, y: area.y, w: 22, h: nv }, cs, `${log && !relerr ? '|' + variable + '|' : variable}${unit ? ` (${unit})` : ''}`);
  c.text(`${variable} at ${axisName} = ${Number(at.toPrecision(4))} cm, ${cut.length} leaf blocks`, area.x, 12);
  await c.save(output, [input]);
  return { input, output, variable, axis: axisName, at, width: c.width, height: c.height, min, max, blocksCut: cut.length };
}
