/**
 * \file flashRead.ts
 * \brief Reads FLASH HDF5 checkpoint and plot files (float64 or float32) into {@link FlashData}, all blocks or a
 * range of them (an HDF5 hyperslab per dataset, so an MPI rank reads only its own blocks).
 */
import type { Dataset, File as H5File } from 'h5wasm';
import { FlashFileError, MeshError } from './errors.js';
import {
  PARAMETER_TABLES,
  cellsPerBlock,
  emptyParameters,
  gidColumnsFor,
  type FlashData,
  type FlashParameters,
  type RawDataset,
} from './flashFormat.js';
import { checkShape, openHdf5, readInts, readNumbers, readValue, requireDataset } from './hdf5.js';

export interface FlashReadOptions {
  /** Read only blocks [start, start + count) (0-based). Default: all blocks. */
  blocks?: { start: number; count: number };
  /** Variables to read. Default: every name in 'unknown names'. */
  variables?: string[];
  /** Called after each dataset is read: (datasets done, datasets in all, name). */
  onProgress?: (done: number, total: number, name: string) => void;
}

/** Datasets the reader interprets; the variables and everything else go elsewhere. */
const BLOCK_DATASETS = ['refine level', 'node type', 'gid', 'bounding box', 'coordinates', 'block size'];

/** FLASH pads names with spaces (Fortran) or nulls (C). */
function trimName(s: unknown): string {
  return String(s).replace(/[\s\0]+$/, '').trim();
}

function readTable(file: H5File, path: string, dataset: string, kind: string, into: Map<string, unknown>): void {
  const ds = file.get(dataset) as Dataset | null;
  if (!ds) return;
  const dtype = ds.dtype;
  const fields = Array.isArray(dtype) ? dtype.map((m) => (m as [string, unknown])[0]) : [];
  if ((ds.shape ?? []).length !== 1 || fields[0] !== 'name' || fields[1] !== 'value') {
    throw new FlashFileError(
      'BAD_SHAPE',
      `${path}: '${dataset}' should be a 1-D table of (name, value) records, got shape [${(ds.shape ?? []).join(', ')}] ` +
        `and fields [${fields.join(', ')}]`,
    );
  }
  const rows = readValue(ds, path, dataset) as [unknown, unknown][];
  for (const [name, value] of rows) {
    const v = kind === 'string' ? trimName(value) : kind === 'logical' ? Number(value) !== 0 : Number(value);
    into.set(trimName(name), v);
  }
}

/** h5wasm dtype string for a compound member's metadata. */
function memberDtype(m: { type: number; size: number; signed?: boolean }): string {
  if (m.type === 3) return `S${m.size}`;
  if (m.type === 1) return m.size === 4 ? '<f' : '<d';
  return m.signed === false ? (m.size === 8 ? '<Q' : '<I') : m.size === 8 ? '<q' : '<i';
}

/** Keeps a dataset the reader does not interpret; per-block ones are cut to the block range. */
function readRaw(file: H5File, path: string, name: string, total: number, rows: { start: number; count: number }): RawDataset | null {
  const ds = file.get(name) as Dataset | null;
  if (!ds || (ds as { type?: string }).type !== 'Dataset') return null;
  const shape = ds.shape ?? [];
  const meta = ds.metadata as { type: number; size: number; compound_type?: { members: { name: string; type: number; size: number; signed?: boolean }[] } };
  if (meta.compound_type) {
    const members = meta.compound_type.members;
    const value = readValue(ds, path, name) as unknown[][];
    const columns = new Map<string, ArrayLike<number> | string[]>();
    members.forEach((m, c) => {
      const col = value.map((row) => row[c]);
      const dt = memberDtype(m);
      columns.set(m.name, m.type === 3 ? col.map(String) : dt === '<i' ? Int32Array.from(col, Number) : Float64Array.from(col, Number));
    });
    return { name, shape, dtype: members.map((m) => [m.name, memberDtype(m)]), data: columns };
  }
  if (meta.type === 3) {
    const v = readValue(ds, path, name);
    return { name, shape, dtype: `S${meta.size}`, data: (Array.isArray(v) ? v : [v]).map(String) };
  }
  if (meta.type !== 0 && meta.type !== 1) return null; // references, enums...: nothing FLASH writes
  const perBlock = shape.length > 0 && shape[0] === total && rows.count !== total;
  const data = readNumbers(ds, path, name, perBlock ? rows : undefined);
  return { name, shape: perBlock ? [rows.count, ...shape.slice(1)] : shape, dtype: memberDtype(meta), data };
}

function blockRange(opt: FlashReadOptions['blocks'], total: number, path: string): { start: number; count: number } {
  if (!opt) return { start: 0, count: total };
  const { start, count } = opt;
  if (!Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count < 1 || start + count > total) {
    throw new MeshError(
      'INVALID_OPTION',
      `${path}: option 'blocks': expected integers start >= 0, count >= 1 with start + count <= ${total} blocks, got start ${start}, count ${count}`,
    );
  }
  return { start, count };
}

function readParameters(file: H5File, path: string): FlashParameters {
  const params = emptyParameters();
  for (const t of PARAMETER_TABLES) readTable(file, path, t.dataset, t.kind, params[t.key] as Map<string, unknown>);
  return params;
}

function formatVersion(file: H5File, path: string): number {
  const info = file.get('sim info') as Dataset | null;
  if (info) {
    const rows = readValue(info, path, 'sim info') as unknown[][];
    const dtype = info.dtype;
    const at = Array.isArray(dtype) ? dtype.findIndex((m) => (m as unknown as [string])[0] === 'file format version') : -1;
    if (at >= 0 && rows.length > 0) return Number(rows[0][at]);
  }
  const ds = file.get('file format version') as Dataset | null;
  return ds ? Number(readNumbers(ds, path, 'file format version')[0]) : 0;
}

/**
 * Reads a FLASH HDF5 file (checkpoint or plot file, any dimensionality). The file is opened read-only.
 * @throws FlashFileError 'FILE_NOT_FOUND', 'NOT_HDF5', 'CORRUPT_FILE', 'NOT_FLASH' (HDF5 but no FLASH grid),
 *   'MISSING_DATASET', 'BAD_SHAPE' naming the dataset; MeshError 'UNKNOWN_VARIABLE' for a variable not in the
 *   file, 'INVALID_OPTION' for a bad block range.
 * @example
 * const all = await readFlashFile('sedov_hdf5_chk_0000');
 * const mine = await readFlashFile('sedov_hdf5_chk_0000', { blocks: { start: 100, count: 50 }, variables: ['dens'] });
 */
export async function readFlashFile(path: string, opts: FlashReadOptions = {}): Promise<FlashData> {
  const file = await openHdf5(path);
  try {
    return readOpenFile(file, path, opts);
  } finally {
    file.close();
  }
}

function readOpenFile(file: H5File, path: string, opts: FlashReadOptions): FlashData {
  const keys = file.keys();
  if (!keys.includes('bounding box') && !keys.includes('unknown names')) {
    throw new FlashFileError('NOT_FLASH', `${path} is an HDF5 file but not a FLASH file (no 'bounding box' or 'unknown names'; datasets: ${keys.join(', ') || 'none'})`);
  }
  const params = readParameters(file, path);
  const namesDs = requireDataset(file, path, 'unknown names');
  checkShape(namesDs, path, 'unknown names', [null, 1]);
  const nv = readValue(namesDs, path, 'unknown names');
  const unknownNames = (Array.isArray(nv) ? nv : [nv]).map(trimName);

  const level = requireDataset(file, path, 'refine level');
  const total = checkShape(level, path, 'refine level', [null])[0];
  const rows = blockRange(opts.blocks, total, path);

  const wanted = opts.variables ?? unknownNames;
  for (const v of wanted) {
    if (!unknownNames.includes(v)) {
      throw new MeshError('UNKNOWN_VARIABLE', `${path}: no variable '${v}' (the file's variables: ${unknownNames.join(', ') || 'none'})`);
    }
  }
  // Block size: the integer scalars, else the first variable's shape.
  const firstVar = unknownNames.length > 0 ? (file.get(unknownNames[0]) as Dataset | null) : null;
  const varShape = firstVar?.shape ?? [];
  const nb = (k: string, axis: number) => params.integerScalars.get(k) ?? varShape[axis];
  const [nxb, nyb, nzb] = [nb('nxb', 3), nb('nyb', 2), nb('nzb', 1)];
  if (![nxb, nyb, nzb].every((n) => Number.isInteger(n) && n >= 1)) {
    throw new FlashFileError('MISSING_DATASET', `${path}: block size unknown: no integer scalars nxb, nyb, nzb and no variable to infer them from`);
  }
  const dimensionality = params.integerScalars.get('dimensionality') ?? (nzb > 1 ? 3 : nyb > 1 ? 2 : 1);
  if (![1, 2, 3].includes(dimensionality)) {
    throw new FlashFileError('BAD_SHAPE', `${path}: integer scalar 'dimensionality' is ${dimensionality}, expected 1, 2 or 3`);
  }
  const gidColumns = gidColumnsFor(dimensionality);
  const expected: Record<string, (number | null)[]> = {
    'refine level': [total],
    'node type': [total],
    gid: [total, gidColumns],
    'bounding box': [total, 3, 2],
    coordinates: [total, 3],
    'block size': [total, 3],
  };
  const datasets = new Map<string, Dataset>();
  for (const name of BLOCK_DATASETS) {
    const ds = requireDataset(file, path, name);
    checkShape(ds, path, name, expected[name]);
    datasets.set(name, ds);
  }
  for (const v of wanted) {
    const ds = requireDataset(file, path, v);
    checkShape(ds, path, v, [total, nzb, nyb, nxb]);
    datasets.set(v, ds);
  }

  const steps = BLOCK_DATASETS.length + wanted.length;
  let done = 0;
  const tick = (name: string) => opts.onProgress?.(++done, steps, name);
  const ints = (name: string) => {
    const v = readInts(datasets.get(name)!, path, name, rows);
    tick(name);
    return v;
  };
  const reals = (name: string) => {
    const v = readNumbers(datasets.get(name)!, path, name, rows);
    tick(name);
    return v;
  };
  const refineLevel = ints('refine level');
  const nodeType = ints('node type');
  const gid = ints('gid');
  const boundingBox = reals('bounding box');
  const coordinates = reals('coordinates');
  const blockSize = reals('block size');
  const variables = new Map<string, Float64Array>();
  for (const v of wanted) variables.set(v, reals(v));
  const isFloat32 = (ds: Dataset | null | undefined) => ds?.dtype === '<f';

  const interpreted = new Set([...BLOCK_DATASETS, ...unknownNames, 'unknown names', ...PARAMETER_TABLES.map((t) => t.dataset)]);
  const extra = keys
    .filter((k) => !interpreted.has(k))
    .map((k) => readRaw(file, path, k, total, rows))
    .filter((r): r is RawDataset => r !== null);
  const data: FlashData = {
    dimensionality,
    nxb,
    nyb,
    nzb,
    totalBlocks: total,
    blockStart: rows.start,
    blockCount: rows.count,
    refineLevel,
    nodeType,
    gid,
    gidColumns,
    boundingBox,
    coordinates,
    blockSize,
    variables,
    unknownNames,
    variablePrecision: isFloat32(wanted.length > 0 ? datasets.get(wanted[0]) : firstVar) ? 'float32' : 'float64',
    metadataPrecision: isFloat32(datasets.get('bounding box')) ? 'float32' : 'float64',
    formatVersion: formatVersion(file, path),
    params,
    extra,
  };
  if (data.variables.size > 0 && cellsPerBlock(data) * rows.count !== data.variables.values().next().value!.length) {
    throw new FlashFileError('CORRUPT_FILE', `${path}: variable data is shorter than its shape`);
  }
  return data;
}
