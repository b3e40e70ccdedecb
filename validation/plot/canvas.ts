/**
 * \file canvas.ts
 * \brief An RGBA pixel canvas for plots: rectangles, lines, text in the bitmap font, saved as PNG by pngjs.
 */
import { writeFileSync } from 'node:fs';
import { writeAtomically } from '../../mesh/outputFile.js';
import { PNG } from 'pngjs';
import { GLYPH_HEIGHT, GLYPH_WIDTH, glyph, textWidth } from './font.js';

export type RGB = [number, number, number];

export class Canvas {
  readonly data: Buffer;
  constructor(
    readonly width: number,
    readonly height: number,
    background: RGB = [255, 255, 255],
  ) {
    this.data = Buffer.alloc(width * height * 4);
    this.fillRect(0, 0, width, height, background);
  }

  /** Sets a pixel; `alpha` in [0, 1] blends over what is there. Outside the canvas: ignored. */
  set(x: number, y: number, c: RGB, alpha = 1): void {
    x = Math.round(x);
    y = Math.round(y);
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return;
    const p = (y * this.width + x) * 4;
    for (let k = 0; k < 3; k++) this.data[p + k] = Math.round(alpha * c[k] + (1 - alpha) * this.data[p + k]);
    this.data[p + 3] = 255;
  }

  fillRect(x0: number, y0: number, w: number, h: number, c: RGB): void {
    for (let y = Math.max(0, y0); y < Math.min(this.height, y0 + h); y++)
      for (let x = Math.max(0, x0); x < Math.min(this.width, x0 + w); x++) this.set(x, y, c);
  }

  /** A line from (x0, y0) to (x1, y1); `dash` = [on, off] pixels for a dashed line. */
  line(x0: number, y0: number, x1: number, y1: number, c: RGB, opts: { width?: number; dash?: [number, number]; alpha?: number } = {}): void {
    const n = Math.max(1, Math.ceil(Math.hypot(x1 - x0, y1 - y0)));
    const w = opts.width ?? 1;
    for (let i = 0; i <= n; i++) {
      if (opts.dash && i % (opts.dash[0] + opts.dash[1]) >= opts.dash[0]) continue;
      const x = x0 + ((x1 - x0) * i) / n;
      const y = y0 + ((y1 - y0) * i) / n;
      for (let a = 0; a < w; a++) for (let b = 0; b < w; b++) this.set(x + a - (w >> 1), y + b - (w >> 1), c, opts.alpha ?? 1);
    }
  }

  /** Outline of a rectangle. */
  rect(x0: number, y0: number, x1: number, y1: number, c: RGB, alpha = 1): void {
    this.line(x0, y0, x1, y0, c, { alpha });
    this.line(x1, y0, x1, y1, c, { alpha });
    this.line(x1, y1, x0, y1, c, { alpha });
    this.line(x0, y1, x0, y0, c, { alpha });
  }

  /** Text with its anchor at (x, y): align 'left' | 'center' | 'right' horizontally, y is the top. */
  text(s: string, x: number, y: number, opts: { scale?: number; align?: 'left' | 'center' | 'right'; color?: RGB; vertical?: boolean } = {}): void {
    const scale = opts.scale ?? 2;
    const c = opts.color ?? [0, 0, 0];
    const w = textWidth(s, scale);
    const shift = opts.align === 'center' ? w / 2 : opts.align === 'right' ? w : 0;
    for (let i = 0; i < s.length; i++) {
      const rows = glyph(s[i]);
      for (let r = 0; r < GLYPH_HEIGHT; r++)
        for (let col = 0; col < 5; col++) {
          if (!((rows[r] >> (4 - col)) & 1)) continue;
          const gx = i * GLYPH_WIDTH * scale + col * scale - shift;
          const gy = r * scale;
          for (let a = 0; a < scale; a++)
            for (let b = 0; b < scale; b++) {
              // vertical text reads bottom to top: rotate the glyph grid by -90 degrees about (x, y)
              if (opts.vertical) this.set(x + gy + b, y - gx - a, c);
              else this.set(x + gx + a, y + gy + b, c);
            }
        }
    }
  }

  /**
   * Encodes as PNG (pngjs) and writes through a temporary file, renamed when complete; refuses an output that is
   * one of `inputs` or an existing non-regular file (OutputFileError, also for write failures).
   */
  async save(path: string, inputs: readonly string[] = []): Promise<void> {
    const png = new PNG({ width: this.width, height: this.height });
    this.data.copy(png.data);
    const bytes = PNG.sync.write(png);
    await writeAtomically(path, inputs, (temp) => writeFileSync(temp, bytes));
  }
}
