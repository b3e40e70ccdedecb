/**
 * \file progress.ts
 * \brief A one-line progress bar on stderr for long CLI work (reading, solving, writing). Silent unless both
 * stdout and stderr are terminals and the output is not JSON, so scripts and pipes never see it.
 */

import type { Progress } from '../solver/progress.js';

const WIDTH = 28;
const silent: Progress = { update() {}, phase() {}, end() {} };

/** Whether progress should be drawn: a terminal on both streams and no --json. */
export function progressWanted(json: boolean): boolean {
  return !json && !!process.stdout.isTTY && !!process.stderr.isTTY;
}

/** A progress line on `stream`, or a silent one when `enabled` is false. */
export function createProgress(enabled: boolean, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!enabled) return silent;
  let timer: NodeJS.Timeout | null = null;
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = null;
  };
  const draw = (text: string) => stream.write(`\r\x1b[2K${text}`);
  return {
    update(label, done, total) {
      stop();
      const f = total > 0 ? Math.min(1, done / total) : 1;
      const full = Math.round(f * WIDTH);
      draw(`[${'#'.repeat(full)}${'.'.repeat(WIDTH - full)}] ${String(Math.round(f * 100)).padStart(3)}% ${label}`);
    },
    phase(label) {
      stop();
      const t0 = performance.now();
      const tick = () => draw(`[${'~'.repeat(WIDTH)}] ${((performance.now() - t0) / 1000).toFixed(1)} s ${label}`);
      tick();
      timer = setInterval(tick, 200);
      timer.unref();
    },
    end() {
      stop();
      draw('');
    },
  };
}
