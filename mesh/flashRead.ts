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
import { checkHostMemory } from '../solver/memory.js';
import { asFlashError, checkReadSize, checkShape, h5call, openHdf5, optionalDataset, readInts, readNumbers, readValue, requireDataset } from './hdf5.js';

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
  const ds = optionalDataset(file, path, dataset);
  if (!ds) return;
  const dtype = h5call(path, `the type of '${dataset}'`, () => ds.dtype);
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
  const ds = optionalDataset(file, path, name);
  if (!ds) return null;
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
  const info = optionalDataset(file, path, 'sim info');
  if (info) {
    const rows = readValue(info, path, 'sim info') as unknown[][];
    const dtype = info.dtype;
    const at = Array.isArray(dtype) ? dtype.findIndex((m) => (m as unknown as [string])[0] === 'file format version') : -1;
    if (at >= 0 && rows.length > 0) return Number(rows[0][at]);
  }
  const ds = optionalDataset(file, path, 'file format version');
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
    const data = readOpenFile(file, path, opts);
    checkBlocks(data, path);
    return data;
  } catch (err) {
    throw asFlashError(err, path, 'the file');
  } finally {
    try {
      file.close();
    } catch {
      // a damaged file may fail to close; the read's own outcome is what matters
    }
  }
}

function readOpenFile(file: H5File, path: string, opts: FlashReadOptions): FlashData {
  const keys = h5call(path, 'the list of datasets', () => file.keys());
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
  const firstVar = unknownNames.length > 0 ? optionalDataset(file, path, unknownNames[0]) : null;
  const varShape = firstVar?.shape ?? [];
  const nb = (k: string, axis: number) => params.integerScalars.get(k) ?? varShape[axis];
  const [nxb, nyb, nzb] = [nb('nxb', 3), nb('nyb', 2), nb('nzb', 1)];
  if (![nxb, nyb, nzb].every((n) => Number.isInteger(n) && n >= 1)) {
    throw new FlashFileError('MISSING_DATASET', `${path}: block size unknown: no integer scalars nxb, nyb, nzb and no variable to infer them from`);
  }
  if (Math.max(nxb, nyb, nzb) > 4096 || nxb * nyb * nzb > 2 ** 24) {
    throw new FlashFileError('BAD_SHAPE', `${path}: blocks of ${nxb} x ${nyb} x ${nzb} cells (integer scalars nxb, nyb, nzb) are beyond any FLASH setup (at most 4096 per axis, 2^24 per block)`);
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

  // claims against the file's size and h5wasm's heap, then what the reader will hold (the block metadata and
  // each variable as float64) against host memory: all before any of it is read
  for (const [name, ds] of datasets) checkReadSize(ds, path, name, rows);
  const cpb = nxb * nyb * nzb;
  checkHostMemory(rows.count * (8 * (cpb * wanted.length + 12) + 4 * (2 + gidColumns)), `${path}: reading ${rows.count} blocks of ${cpb} cells (${wanted.length} variables)`);
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

/** Block sizes of a parent and its child agree to this relative slack (float32 metadata carries ~1e-7). */
const SIZE_TOLERANCE = 1e-4;

/**
 * The FLASH-file checks that keep a damaged or meaningless block structure from being solved and copied into an
 * output: every bounding box, block size and coordinate finite, boxes not inverted, block sizes positive (on the
 * file's axes) and equal to their boxes' extents, 'refine level' >= 1, 'node type' 1, 2 or 3; and, when every
 * block was read, the 'gid' tree: each parent and child number -1 (none) or a block number, a child's parent is the block naming it,
 * a child is one level finer and half the size of its parent, a block without parent is on level 1, and 'node
 * type' is 1 (leaf) exactly for the blocks without children.
 * @throws FlashFileError 'BAD_MESH' naming the block (1-based, as FLASH numbers them) and the dataset.
 */
export function checkBlocks(d: FlashData, path: string): void {
  const bad = (b: number, what: string) => new FlashFileError('BAD_MESH', `${path}: block ${d.blockStart + b + 1}: ${what}`);
  const n = d.blockCount;
  const dim = d.dimensionality;
  for (let b = 0; b < n; b++) {
    for (let a = 0; a < 3; a++) {
      const lo = d.boundingBox[b * 6 + 2 * a];
      const hi = d.boundingBox[b * 6 + 2 * a + 1];
      const size = d.blockSize[b * 3 + a];
      if (!Number.isFinite(lo) || !Number.isFinite(hi)) throw bad(b, `'bounding box' on axis ${'xyz'[a]} is [${lo}, ${hi}] (not finite)`);
      if (!Number.isFinite(size)) throw bad(b, `'block size' on axis ${'xyz'[a]} is ${size} (not finite)`);
      if (!Number.isFinite(d.coordinates[b * 3 + a])) throw bad(b, `'coordinates' on axis ${'xyz'[a]} is ${d.coordinates[b * 3 + a]} (not finite)`);
      if (a >= dim) continue;
      if (!(hi > lo)) throw bad(b, `'bounding box' on axis ${'xyz'[a]} is [${lo}, ${hi}] (empty or inverted)`);
      if (!(size > 0)) throw bad(b, `'block size' on axis ${'xyz'[a]} is ${size} (must be positive)`);
      if (Math.abs(size - (hi - lo)) > SIZE_TOLERANCE * size) {
        throw bad(b, `'block size' on axis ${'xyz'[a]} is ${size} but its 'bounding box' spans ${hi - lo}`);
      }
    }
    const level = d.refineLevel[b];
    if (!(level >= 1 && level <= 60)) throw bad(b, `'refine level' is ${level} (expected 1 to 60)`);
    const type = d.nodeType[b];
    if (type !== 1 && type !== 2 && type !== 3) throw bad(b, `'node type' is ${type} (PARAMESH: 1 leaf, 2 or 3 parent)`);
  }
  if (d.blockStart !== 0 || d.blockCount !== d.totalBlocks) return; // the tree needs every block
  const gc = d.gidColumns;
  const parentCol = 2 * dim;
  const nChildren = 2 ** dim;
  for (let b = 0; b < n; b++) {
    const parent = d.gid[b * gc + parentCol];
    const level = d.refineLevel[b];
    if (parent < -1 || parent === 0) throw bad(b, `'gid' names parent ${parent} (expected -1 for none, or a block number)`);
    if (parent === -1) {
      if (level !== 1) throw bad(b, `'refine level' is ${level} but 'gid' gives it no parent (${parent}); only level-1 blocks have none`);
    } else {
      if (parent > n) throw bad(b, `'gid' names parent ${parent} but the file has ${n} blocks`);
      const p = parent - 1;
      if (level !== d.refineLevel[p] + 1) {
        throw bad(b, `'refine level' is ${level} but its parent, block ${parent}, is on level ${d.refineLevel[p]} (expected ${d.refineLevel[p] + 1})`);
      }
      let named = false;
      for (let c = 0; c < nChildren; c++) named ||= d.gid[p * gc + parentCol + 1 + c] === b + 1;
      if (!named) throw bad(b, `'gid' names block ${parent} as its parent, but block ${parent} does not list it as a child`);
      for (let a = 0; a < dim; a++) {
        const ratio = d.blockSize[p * 3 + a] / d.blockSize[b * 3 + a];
        if (Math.abs(ratio - 2) > 2 * SIZE_TOLERANCE) {
          throw bad(b, `'block size' on axis ${'xyz'[a]} is ${d.blockSize[b * 3 + a]}, not half of its parent's (block ${parent}: ${d.blockSize[p * 3 + a]})`);
        }
      }
    }
    let children = 0;
    for (let c = 0; c < nChildren; c++) {
      const child = d.gid[b * gc + parentCol + 1 + c];
      if (child === -1) continue;
      if (child < -1 || child === 0 || child > n) throw bad(b, `'gid' names child ${child} but the file has ${n} blocks`);
      if (d.gid[(child - 1) * gc + parentCol] !== b + 1) {
        throw bad(b, `'gid' names block ${child} as a child, but block ${child} names ${d.gid[(child - 1) * gc + parentCol]} as its parent`);
      }
      children++;
    }
    if (children !== 0 && children !== nChildren) throw bad(b, `'gid' lists ${children} children (expected none or ${nChildren})`);
    const leaf = children === 0;
    if ((d.nodeType[b] === 1) !== leaf) {
      throw bad(b, `'node type' is ${d.nodeType[b]} but 'gid' gives it ${children} children (node type 1 means a leaf, without children)`);
    }
  }
}
