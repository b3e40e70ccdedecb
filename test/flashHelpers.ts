/** Helpers for the FLASH file tests: temporary directories, file hashes, and Python (h5py, yt) as the reference reader. */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** The real FLASH 4.4 plot file in the shared data (shared/ sits beside the repository). */
export const SEDOV_PLOT_FILE = resolve(__dirname, '../../shared/data/flash/sedov_hdf5_plt_cnt_0000');
export const haveSedov = existsSync(SEDOV_PLOT_FILE);

const made: string[] = [];

/** A fresh temporary directory; {@link removeTempDirs} (each file's afterAll) deletes them all. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'amrgrav-flash-'));
  made.push(dir);
  return dir;
}

export function removeTempDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

/** The system Python with h5py and yt (Debian's python3-yt; CI installs it). */
export const PYTHON = '/usr/bin/python3';

/** Runs a Python script, passing `args`; returns its stdout parsed as JSON. Throws (fails the test) on any error. */
export function python(script: string, ...args: string[]): unknown {
  const out = execFileSync(PYTHON, ['-c', script, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  const last = out.trim().split('\n').pop() ?? '';
  return JSON.parse(last);
}
