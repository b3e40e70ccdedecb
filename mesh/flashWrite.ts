/**
 * \file flashWrite.ts
 * \brief Writes {@link FlashData} as a FLASH HDF5 file (format version 9) that FLASH's own tools and yt read.
 * The file is written to a temporary name in the target directory and renamed over the target only when
 * complete, so a failed write never leaves a half-written file under the target name.
 */
import type { File as H5File } from 'h5wasm';
import { FlashFileError, MeshError } from './errors.js';
import {
  FLASH_FORMAT_VERSION,
  FLASH_STRING_LENGTH,
  FLASH_VARIABLE_NAME_LENGTH,
  PARAMETER_TABLES,
  cellsPerBlock,
  type FlashData,
  type FlashParameterKind,
  type RawDataset,
} from './flashFormat.js';
import { h5wasm } from './hdf5.js';
import { writeAtomically } from './outputFile.js';

export interface FlashWriteOptions {
  /** Called after each dataset is written: (datasets done, datasets in all, name). */
  onProgress?: (done: number, total: number, name: string) => void;
  /** Files the output must not be (e.g. the file the data was read from). */
  inputs?: string[];
}

const VALUE_DTYPE: Record<FlashParameterKind, string> = { integer: '<i', real: '<d', logical: '<i', string: `S${FLASH_STRING_LENGTH}` };

function pad(s: string, width: number): string {
  return s.length >= width ? s.slice(0, width) : s.padEnd(width, ' ');
}

/** FLASH's 'sim info' record, for files that do not carry one already. */
export function defaultSimInfo(setupCall: string): RawDataset {
  const s = (w: number, v = '') => [pad(v, w)];
  const members: [string, string, number][] = [
    ['setup call', 'S400', 400],
    ['file creation time', 'S80', 80],
    ['flash version', 'S80', 80],
    ['build date', 'S80', 80],
    ['build dir', 'S80', 80],
    ['build machine', 'S80', 80],
    ['cflags', 'S400', 400],
    ['fflags', 'S400', 400],
    ['setup time stamp', 'S80', 80],
    ['build time stamp', 'S80', 80],
  ];
  const values: Record<string, string> = {
    'setup call': setupCall,
    'file creation time': new Date().toUTCString(),
    'flash version': 'amrgrav (FLASH file format 9)',
  };
  const data = new Map<string, ArrayLike<number> | string[]>([['file format version', Int32Array.of(FLASH_FORMAT_VERSION)]]);
  for (const [name, , w] of members) data.set(name, s(w, values[name]));
  return { name: 'sim info', shape: [1], dtype: [['file format version', '<i'], ...members.map(([n, d]) => [n, d] as [string, string])], data };
}

function realDtype(p: 'float32' | 'float64'): string {
  return p === 'float32' ? '<f' : '<d';
}

function asPrecision(v: Float64Array, p: 'float32' | 'float64'): Float32Array | Float64Array {
  return p === 'float32' ? new Float32Array(v) : v;
}

function checkData(d: FlashData, path: string): void {
  if (d.blockStart !== 0 || d.blockCount !== d.totalBlocks) {
    throw new MeshError('INVALID_OPTION', `${path}: cannot write a block range (${d.blockStart}..${d.blockStart + d.blockCount} of ${d.totalBlocks}) as a whole file`);
  }
  const n = d.blockCount;
  const lengths: [string, number, number][] = [
    ['refine level', d.refineLevel.length, n],
    ['node type', d.nodeType.length, n],
    ['gid', d.gid.length, n * d.gidColumns],
    ['bounding box', d.boundingBox.length, n * 6],
    ['coordinates', d.coordinates.length, n * 3],
    ['block size', d.blockSize.length, n * 3],
  ];
  for (const [name, v] of d.variables) lengths.push([name, v.length, n * cellsPerBlock(d)]);
  for (const [name, got, want] of lengths) {
    if (got !== want) throw new FlashFileError('BAD_SHAPE', `${path}: '${name}' holds ${got} values, expected ${want} for ${n} blocks`);
  }
  for (const name of d.variables.keys()) {
    if (name.length < 1 || name.length > FLASH_VARIABLE_NAME_LENGTH || name.trim() !== name) {
      throw new MeshError('INVALID_OPTION', `${path}: variable name '${name}': FLASH names are 1 to ${FLASH_VARIABLE_NAME_LENGTH} characters, no spaces`);
    }
  }
}

/**
 * The datasets of a FLASH file for `d`, in writing order: parameter tables, 'unknown names', block metadata,
 * 'sim info' (a default one if `d` has none) and the other datasets of `d.extra`, then the variables.
 */
export function flashDatasets(d: FlashData): RawDataset[] {
  const n = d.blockCount;
  const names = [...d.variables.keys()];
  const hasSimInfo = d.extra.some((e) => e.name === 'sim info');
  const extra = hasSimInfo ? d.extra : [defaultSimInfo('amrgrav'), ...d.extra];
  const out: RawDataset[] = [];
  const put = (name: string, data: RawDataset['data'], shape: number[], dtype: RawDataset['dtype']) => out.push({ name, data, shape, dtype });
  for (const t of PARAMETER_TABLES) {
    const table = d.params[t.key] as Map<string, number | string | boolean>;
    if (table.size === 0) continue;
    const keys = [...table.keys()];
    const values = [...table.values()];
    const column =
      t.kind === 'string'
        ? values.map((v) => pad(String(v), FLASH_STRING_LENGTH))
        : t.kind === 'real'
          ? Float64Array.from(values, Number)
          : Int32Array.from(values, (v) => (typeof v === 'boolean' ? (v ? 1 : 0) : Number(v)));
    const data = new Map<string, ArrayLike<number> | string[]>([
      ['name', keys.map((k) => pad(k, FLASH_STRING_LENGTH))],
      ['value', column],
    ]);
    put(t.dataset, data, [keys.length], [['name', `S${FLASH_STRING_LENGTH}`], ['value', VALUE_DTYPE[t.kind]]]);
  }
  put('unknown names', names.map((s) => pad(s, FLASH_VARIABLE_NAME_LENGTH)), [names.length, 1], `S${FLASH_VARIABLE_NAME_LENGTH}`);
  put('refine level', d.refineLevel, [n], '<i');
  put('node type', d.nodeType, [n], '<i');
  put('gid', d.gid, [n, d.gidColumns], '<i');
  const meta = realDtype(d.metadataPrecision);
  put('coordinates', asPrecision(d.coordinates, d.metadataPrecision), [n, 3], meta);
  put('block size', asPrecision(d.blockSize, d.metadataPrecision), [n, 3], meta);
  put('bounding box', asPrecision(d.boundingBox, d.metadataPrecision), [n, 3, 2], meta);
  for (const e of extra) put(e.name, e.data, e.shape, e.dtype);
  const vtype = realDtype(d.variablePrecision);
  for (const name of names) put(name, asPrecision(d.variables.get(name)!, d.variablePrecision), [n, d.nzb, d.nyb, d.nxb], vtype);
  return out;
}

function writeAll(f: H5File, d: FlashData, opts: FlashWriteOptions): void {
  const list = flashDatasets(d);
  const steps = list.length;
  list.forEach((e, i) => {
    f.create_dataset({ name: e.name, data: e.data as never, shape: e.shape, dtype: e.dtype });
    opts.onProgress?.(i + 1, steps, e.name);
  });
}

/**
 * Writes a FLASH file: parameter tables, 'sim info' (a default one if `data` has none), 'unknown names' (the
 * variables held, in order), block metadata, the other datasets of `data.extra`, then the variables, in the
 * precision `data` names. Replaces `path` atomically (never an input, a directory, device, FIFO or socket).
 * @throws MeshError 'INVALID_OPTION' for a partial block range or a name FLASH cannot store; FlashFileError
 *   'BAD_SHAPE' for arrays of the wrong length; OutputFileError 'OUTPUT_IS_INPUT', 'OUTPUT_NOT_REGULAR',
 *   'WRITE_FAILED' (missing or read-only directory, disk full, ...).
 */
export async function writeFlashFile(path: string, data: FlashData, opts: FlashWriteOptions = {}): Promise<void> {
  checkData(data, path);
  const h5 = await h5wasm();
  await writeAtomically(path, opts.inputs ?? [], async (temp) => {
    const f: H5File = new h5.File(temp, 'w');
    try {
      writeAll(f, data, opts);
    } finally {
      f.close();
    }
  });
}
