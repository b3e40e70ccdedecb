/**
 * \file hdf5.ts
 * \brief The one door to h5wasm (HDF5 compiled to WebAssembly, host files through NODERAWFS): loading it once,
 * opening files with errors turned into typed FlashFileErrors, and plain conversions of its values.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Dataset, File as H5File } from 'h5wasm';
import { AmrgravError, OutOfMemoryError } from '../solver/errors.js';
import { formatBytes } from '../solver/memory.js';
import { FlashFileError } from './errors.js';

type H5wasm = typeof import('h5wasm');
let loaded: Promise<H5wasm> | null = null;
let wasmModule: H5Module | null = null;

/** h5wasm, ready; its HDF5 errors are thrown as JS errors instead of printed to stderr. */
export function h5wasm(): Promise<H5wasm> {
  loaded ??= (async () => {
    const mod = (await import('h5wasm/node')) as unknown as H5wasm;
    const module = await mod.ready;
    module.activate_throwing_error_handler();
    wasmModule = module as unknown as H5Module;
    return mod;
  })();
  return loaded;
}

/** The low-level h5wasm functions used to copy datasets and attributes byte for byte (see flashCopy.ts). */
export interface H5Module {
  _malloc(n: number): number;
  _free(ptr: number): void;
  HEAPU8: Uint8Array;
  get_dataset_metadata(fileId: bigint, path: string): H5Metadata;
  get_dataset_data(fileId: bigint, path: string, count: null, offset: null, stride: null, ptr: bigint): number;
  create_dataset(fileId: bigint, path: string, ptr: bigint, metadata: unknown): number;
  get_attribute_names(fileId: bigint, path: string): string[];
  get_attribute_metadata(fileId: bigint, path: string, name: string): H5Metadata;
  get_attribute_data(fileId: bigint, path: string, name: string, ptr: bigint): number;
  create_attribute(fileId: bigint, path: string, name: string, ptr: bigint, metadata: unknown): number;
  create_group(fileId: bigint, path: string, trackOrder: boolean): number;
  get_names(fileId: bigint, path: string, recursive: boolean): string[];
  get_type(fileId: bigint, path: string): number;
  H5G_GROUP: number;
  H5G_DATASET: number;
}

/** h5wasm's description of a dataset or attribute: its type (class, size, members) and dataspace. */
export interface H5Metadata {
  type: number;
  size: number;
  signed?: boolean;
  vlen?: boolean;
  littleEndian?: boolean;
  cset?: number;
  strpad?: number;
  shape: number[] | null;
  maxshape?: number[] | null;
  chunks?: number[] | null;
  total_size: number;
  compound_type?: { nmembers: number; members: (H5Metadata & { name: string; offset: number })[] };
}

/** The low-level module (after {@link h5wasm} resolved). */
export async function h5module(): Promise<H5Module> {
  await h5wasm();
  return wasmModule!;
}

const SIGNATURE = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/** HDF5 puts its 8-byte signature at offset 0, 512, 1024, 2048, ... (a user block may come first). */
function hasHdf5Signature(path: string, size: number): boolean {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(8);
    for (let at = 0; at + 8 <= size; at = at === 0 ? 512 : at * 2) {
      if (readSync(fd, buf, 0, 8, at) === 8 && SIGNATURE.every((b, i) => buf[i] === b)) return true;
    }
    return false;
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens an existing HDF5 file read-only.
 * @throws FlashFileError 'FILE_NOT_FOUND', 'NOT_HDF5' (no HDF5 signature), 'CORRUPT_FILE' (HDF5 cannot open it).
 */
export async function openHdf5(path: string): Promise<H5File> {
  const abs = resolve(path);
  let size: number;
  try {
    const st = statSync(abs);
    if (!st.isFile()) throw new FlashFileError('FILE_NOT_FOUND', `${path}: not a regular file`);
    size = st.size;
  } catch (err) {
    if (err instanceof FlashFileError) throw err;
    throw new FlashFileError('FILE_NOT_FOUND', `${path}: ${(err as Error).message}`);
  }
  if (!hasHdf5Signature(abs, size)) throw new FlashFileError('NOT_HDF5', `${path} is not an HDF5 file (no HDF5 signature)`);
  const h5 = await h5wasm();
  try {
    return new h5.File(abs, 'r');
  } catch (err) {
    throw new FlashFileError('CORRUPT_FILE', `${path}: HDF5 cannot open it (truncated or damaged?): ${firstLine(err)}`);
  }
}

/**
 * Runs `fn` (any h5wasm call: metadata, attributes, reads, hyperslabs) and turns whatever HDF5 or the
 * WebAssembly heap throws into a typed error: an AmrgravError passes through, a failed allocation becomes
 * OutOfMemoryError, everything else FlashFileError 'CORRUPT_FILE' naming the file and `what`.
 */
export function h5call<T>(path: string, what: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw asFlashError(err, path, what);
  }
}

/** The typed error for a failure while reading `what` of `path` (see {@link h5call}). */
export function asFlashError(err: unknown, path: string, what: string): AmrgravError {
  if (err instanceof AmrgravError) return err;
  const text = firstLine(err);
  if (err instanceof RangeError || /alloc|out of memory|memory access out of bounds/i.test(text)) {
    if (/memory access out of bounds/i.test(text)) return new FlashFileError('CORRUPT_FILE', `${path}: cannot read ${what}: ${text}`);
    return new OutOfMemoryError(`${path}: not enough memory to read ${what}: ${text}`);
  }
  return new FlashFileError('CORRUPT_FILE', `${path}: cannot read ${what} (damaged file?): ${text}`);
}

/** Largest single read through h5wasm: its WebAssembly heap holds at most 2 GiB, the file's metadata included. */
export const H5WASM_READ_LIMIT = 1.5 * 2 ** 30;

/** Bytes of one element of a dataset (0 if unknown). */
export function elementBytes(ds: Dataset): number {
  return Number((ds.metadata as { size?: number }).size ?? 0);
}

/** The most specific message of an HDF5 error stack: the innermost frame's text (e.g. "truncated file: ..."). */
export function firstLine(err: unknown): string {
  const lines = String((err as Error)?.message ?? err).split('\n');
  const frames = lines.map((l) => /#\d+:.*?\(\): (.*)$/.exec(l)?.[1]).filter((m): m is string => !!m);
  return (frames.at(-1) ?? lines[0]).trim();
}

/** A dataset of the file, or a 'MISSING_DATASET' error naming it. */
export function requireDataset(file: H5File, path: string, name: string): Dataset {
  const d = h5call(path, `dataset '${name}'`, () => {
    const got = file.get(name);
    if (got && (got as { type?: string }).type === 'Dataset') void (got as Dataset).metadata; // loads (and checks) the header
    return got;
  });
  if (!d || (d as { type?: string }).type !== 'Dataset') {
    const keys = h5call(path, 'the list of datasets', () => file.keys());
    throw new FlashFileError('MISSING_DATASET', `${path}: dataset '${name}' is missing (datasets: ${keys.join(', ')})`);
  }
  return d as Dataset;
}

/** A dataset if present (null otherwise), its header loaded; HDF5 failures are 'CORRUPT_FILE'. */
export function optionalDataset(file: H5File, path: string, name: string): Dataset | null {
  return h5call(path, `dataset '${name}'`, () => {
    const got = file.get(name);
    if (!got || (got as { type?: string }).type !== 'Dataset') return null;
    void (got as Dataset).metadata;
    return got as Dataset;
  });
}

/** Checks a dataset's shape; `null` in `expected` accepts any extent on that axis. */
export function checkShape(ds: Dataset, path: string, name: string, expected: (number | null)[]): number[] {
  const shape = h5call(path, `the shape of '${name}'`, () => ds.shape ?? []);
  const ok = shape.length === expected.length && expected.every((e, i) => e === null || e === shape[i]);
  if (!ok) {
    const want = `[${expected.map((e) => (e === null ? 'any' : e)).join(', ')}]`;
    throw new FlashFileError('BAD_SHAPE', `${path}: dataset '${name}' has shape [${shape.join(', ')}], expected ${want}`);
  }
  return shape;
}

/** Reads a dataset (or the block rows [start, start + count) of it) as numbers, whatever its stored type. */
export function readNumbers(ds: Dataset, path: string, name: string, rows?: { start: number; count: number }): Float64Array {
  try {
    checkReadSize(ds, path, name, rows);
    const v = rows ? ds.slice([[rows.start, rows.start + rows.count]]) : ds.value;
    if (v instanceof Float64Array) return v;
    if (v instanceof BigInt64Array || v instanceof BigUint64Array) return Float64Array.from(v, Number);
    if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return new Float64Array(v as unknown as ArrayLike<number>);
    if (typeof v === 'number') return Float64Array.of(v);
    throw new Error(`not numeric (dtype ${JSON.stringify(ds.dtype)})`);
  } catch (err) {
    throw asFlashError(err, path, `dataset '${name}'`);
  }
}

/**
 * Refuses, before any allocation, a read larger than h5wasm can hold or than the file could contain: an
 * unfiltered dataset cannot hold more bytes than the whole file (a damaged or crafted header claiming billions of
 * blocks is refused here, not after gigabytes of allocation).
 */
export function checkReadSize(ds: Dataset, path: string, name: string, rows?: { start: number; count: number }): void {
  const { shape, size, total } = h5call(path, `the header of '${name}'`, () => {
    const m = ds.metadata as { shape?: number[] | null; size: number; total_size?: number };
    return { shape: m.shape ?? [], size: Number(m.size), total: Number(m.total_size ?? 1) };
  });
  const rowValues = shape.length > 0 && shape[0] > 0 ? total / shape[0] : total;
  const bytes = (rows ? rows.count * rowValues : total) * size;
  const whole = total * size;
  const filtered = h5call(path, `the filters of '${name}'`, () => {
    try {
      return ((ds as unknown as { filters?: unknown[] }).filters ?? []).length > 0;
    } catch {
      return false;
    }
  });
  if (!filtered && whole > fileBytes(path)) {
    throw new FlashFileError(
      'CORRUPT_FILE',
      `${path}: dataset '${name}' claims shape [${shape.join(', ')}] (${formatBytes(whole)}) but the whole file is ${formatBytes(fileBytes(path))}`,
    );
  }
  if (bytes > H5WASM_READ_LIMIT) {
    throw new OutOfMemoryError(
      `${path}: reading dataset '${name}' needs ${formatBytes(bytes)} in one piece; the limit is ${formatBytes(H5WASM_READ_LIMIT)} ` +
        `(h5wasm's 2 GiB WebAssembly heap): read fewer blocks at a time`,
    );
  }
}

/** The size of a file. */
function fileBytes(path: string): number {
  return statSync(resolve(path)).size;
}

/** Like {@link readNumbers}, for integer datasets. */
export function readInts(ds: Dataset, path: string, name: string, rows?: { start: number; count: number }): Int32Array {
  const v = readNumbers(ds, path, name, rows);
  return Int32Array.from(v);
}

/** Reads a whole dataset's value, any type, mapping HDF5 failures to 'CORRUPT_FILE'. */
export function readValue(ds: Dataset, path: string, name: string): unknown {
  try {
    checkReadSize(ds, path, name);
    return ds.value;
  } catch (err) {
    throw asFlashError(err, path, `dataset '${name}'`);
  }
}
