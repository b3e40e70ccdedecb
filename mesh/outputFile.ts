/**
 * \file outputFile.ts
 * \brief Every file amrgrav writes goes through here: the target is checked (never one of the inputs, never an
 * existing directory, device, FIFO or socket), written to a hidden temporary file beside it and renamed over it
 * only when complete. Temporary files in progress are removed on SIGINT, SIGTERM and SIGHUP (see
 * {@link removeTempFilesOnSignals}) and at exit, so an interrupted write leaves nothing behind.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, realpathSync, renameSync, rmSync, statSync, type Stats } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AmrgravError } from '../solver/errors.js';
import { OutputFileError } from './errors.js';

function statOrNull(path: string, follow: boolean): Stats | null {
  try {
    return follow ? statSync(path) : lstatSync(path);
  } catch {
    return null;
  }
}

/** What an existing non-regular node is, in words. */
export function nodeKind(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO (named pipe)';
  if (st.isSocket()) return 'a socket';
  if (st.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Whether two paths name the same existing file (device and inode: symlinks, hard links and '..' included). */
export function sameFile(a: string, b: string): boolean {
  const sa = statOrNull(a, true);
  const sb = statOrNull(b, true);
  if (sa && sb) return sa.dev === sb.dev && sa.ino === sb.ino;
  return false;
}

/**
 * Checks an output path before any work: refuses an output that is any of `inputs`, or an existing node that is
 * not a regular file (a symlink is followed: its target must be a regular file, and is what gets written).
 * Returns the path to write (the symlink's target, else the absolute path).
 * @throws OutputFileError 'OUTPUT_IS_INPUT', 'OUTPUT_NOT_REGULAR', 'WRITE_FAILED' (no such directory).
 */
export function checkOutputPath(output: string, inputs: readonly string[] = []): string {
  for (const input of inputs) {
    if (sameFile(input, output)) {
      throw new OutputFileError('OUTPUT_IS_INPUT', `the output ${output} is the input ${input} (the same file): inputs are never modified; choose another output`);
    }
  }
  const link = statOrNull(output, false);
  let target = resolve(output);
  if (link?.isSymbolicLink()) {
    try {
      target = realpathSync(output);
    } catch {
      // a dangling link: the rename replaces the link itself
    }
  }
  const st = statOrNull(target, false);
  if (st && !st.isFile()) {
    throw new OutputFileError('OUTPUT_NOT_REGULAR', `the output ${output} exists and is ${nodeKind(st)}: amrgrav writes regular files only and never replaces anything else`);
  }
  const dir = statOrNull(dirname(target), true);
  if (!dir) throw new OutputFileError('WRITE_FAILED', `cannot write ${output}: the directory ${dirname(target)} does not exist`);
  if (!dir.isDirectory()) throw new OutputFileError('WRITE_FAILED', `cannot write ${output}: ${dirname(target)} is not a directory`);
  return target;
}

/** Temporary files being written now (removed by signal and exit handlers). */
const pending = new Set<string>();

/** A plain-words reason for a file-system error. */
export function writeErrorReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const reasons: Record<string, string> = {
    ENOENT: 'the directory does not exist',
    EACCES: 'permission denied (read-only directory?)',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOSPC: 'no space left on the device (disk full)',
    EDQUOT: 'disk quota exceeded',
    EISDIR: 'it is a directory',
    ENOTDIR: 'a part of the path is not a directory',
    EXDEV: 'cannot rename across file systems',
    EIO: 'input/output error',
    EFBIG: 'file too large',
  };
  if (e?.code && reasons[e.code]) return `${reasons[e.code]} (${e.code})`;
  const text = String(e?.message ?? err).split('\n').map((l) => /#\d+:.*?\(\): (.*)$/.exec(l)?.[1]).filter(Boolean).at(-1);
  return text ?? String(e?.message ?? err).split('\n')[0];
}

/**
 * Writes `output` atomically: checks it ({@link checkOutputPath}), lets `write` fill a temporary file in the same
 * directory, then renames it over the target. On any failure the temporary file is removed and the target left
 * as it was.
 * @throws OutputFileError as {@link checkOutputPath}, or 'WRITE_FAILED' naming the reason (read-only or missing
 *   directory, disk full, ...); a typed error thrown by `write` passes through.
 */
export async function writeAtomically(output: string, inputs: readonly string[], write: (temp: string) => void | Promise<void>): Promise<void> {
  const target = checkOutputPath(output, inputs);
  const temp = join(dirname(target), `.${basename(target)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  pending.add(temp);
  try {
    await write(temp);
    if (process.env.AMRGRAV_TEST_HOLD_WRITE === '1') await holdForTest(temp);
    checkOutputPath(output, inputs); // the target may have changed while we wrote
    renameSync(temp, target);
  } catch (err) {
    rmSync(temp, { force: true });
    if (err instanceof AmrgravError) throw err;
    throw new OutputFileError('WRITE_FAILED', `cannot write ${output}: ${writeErrorReason(err)}`);
  } finally {
    pending.delete(temp);
  }
}

/** Test hook: announce the temporary file on stderr and wait (for a signal) so a test can interrupt a write. */
async function holdForTest(temp: string): Promise<void> {
  process.stderr.write(`amrgrav: holding ${temp}\n`);
  await new Promise((r) => setTimeout(r, 600_000));
}

function removePending(): void {
  for (const t of pending) rmSync(t, { force: true });
  pending.clear();
}

let installed = false;

/**
 * For command-line programs: on SIGINT, SIGTERM or SIGHUP remove the temporary files of writes in progress,
 * then die of the same signal (the conventional exit status 128 + signal); also remove them at exit.
 */
export function removeTempFilesOnSignals(): void {
  if (installed) return;
  installed = true;
  process.on('exit', removePending);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      removePending();
      process.removeListener(sig, onSignal);
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig); // die of it, as without a handler
    };
    process.on(sig, onSignal);
  }
}
