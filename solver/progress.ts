/**
 * \file progress.ts
 * \brief What the library's long calls (solveFlashFile, sweepMaclaurin, ...) report progress to: the interface
 * only. The terminal's progress bar, which implements it, is the command line's (app/progress.ts).
 */

export interface Progress {
  /** Shows `label` with a bar at done/total. */
  update(label: string, done: number, total: number): void;
  /** Shows `label` with a running clock until the next update or end (for work that reports no fraction). */
  phase(label: string): void;
  /** Clears the line. */
  end(): void;
}
