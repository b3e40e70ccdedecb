/**
 * \file flashCopy.ts
 * \brief Writes a copy of a FLASH file with some variables replaced or added, keeping everything else byte for
 * byte: each dataset and attribute not replaced is read as its stored bytes and written back with the same
 * HDF5 type (compound member names, order and offsets, string sizes, padding and character set, integer and
 * float sizes) and shape. Only the replaced variables, their 'minimum'/'maximum' attributes, other datasets
 * replaced in place (such as the particle table) and, when variables are added, 'unknown names' change. (The storage layout is not kept: chunked or compressed datasets come out
 * contiguous, with the same values. Big-endian data comes out little-endian, with the same values.)
 */
import type { File as H5File } from 'h5wasm';
import { FlashFileError } from './errors.js';
import { h5call, h5module, h5wasm, openHdf5, type H5Metadata, type H5Module } from './hdf5.js';
import { writeAtomically } from './outputFile.js';

export interface FlashCopyOptions {
  /** Called after each dataset is written: (datasets done, datasets in all, name). */
  onProgress?: (done: number, total: number, name: string) => void;
  /** Other inputs the output must not be (the source is always one). */
  inputs?: string[];
  /**
   * Other numeric datasets to replace in place (not variables: 'unknown names' does not change), each with all its
   * values in the stored shape, row-major, written with the stored type (e.g. 'tracer particles' with some
   * columns changed). Each must exist in the input.
   */
  datasets?: Map<string, Float64Array>;
}

const H5T_INTEGER = 0;
const H5T_FLOAT = 1;
const H5T_STRING = 3;
const H5T_COMPOUND = 6;
/** hsize_t's H5S_UNLIMITED. */
const UNLIMITED = 2n ** 64n - 1n;

/** Whether h5wasm can create a dataset of this type with these exact bytes. */
function copyable(m: H5Metadata): boolean {
  if (m.littleEndian === false && m.type !== H5T_STRING && m.type !== H5T_COMPOUND) return false;
  if (m.type === H5T_INTEGER || m.type === H5T_FLOAT) return m.type !== H5T_FLOAT || m.size === 4 || m.size === 8;
  if (m.type === H5T_STRING) return !m.vlen;
  if (m.type === H5T_COMPOUND) return (m.compound_type?.members ?? []).every((x) => copyable(x));
  return false;
}

/** The metadata create_dataset / create_attribute take: shape, maxshape, chunks as BigInt arrays. */
function creationMetadata(m: H5Metadata, shape: number[], keepLayout: boolean): Record<string, unknown> {
  const chunks = keepLayout && m.chunks ? m.chunks.map(BigInt) : null;
  const maxshape = chunks && m.maxshape ? m.maxshape.map((x) => (x >= 2 ** 63 ? UNLIMITED : BigInt(x))) : shape.map(BigInt);
  return { ...m, shape: shape.map(BigInt), maxshape, chunks, compression: 0, compression_opts: [], track_order: false };
}

class Copier {
  constructor(
    private readonly M: H5Module,
    private readonly src: bigint,
    private readonly dst: bigint,
    private readonly path: string,
  ) {}

  /** Allocates n bytes on the WebAssembly heap, runs fn, frees. */
  private withBuffer<T>(n: number, fn: (ptr: number) => T): T {
    const ptr = this.M._malloc(Math.max(1, n));
    if (!ptr) throw new RangeError(`cannot allocate ${n} bytes on the h5wasm heap`);
    try {
      return fn(ptr);
    } finally {
      this.M._free(ptr);
    }
  }

  private unsupported(what: string, m: H5Metadata): FlashFileError {
    return new FlashFileError('UNSUPPORTED_DATATYPE', `${this.path}: ${what} has an HDF5 type amrgrav cannot copy exactly (class ${m.type}, ${m.size} bytes${m.vlen ? ', variable length' : ''}); nothing was written`);
  }

  /** Copies the attributes of `obj` (a path), except those named in `skip`. */
  attributes(obj: string, skip: Set<string> = new Set()): void {
    const names = h5call(this.path, `the attributes of ${obj}`, () => this.M.get_attribute_names(this.src, obj));
    for (const name of names) {
      if (skip.has(name)) continue;
      const what = `attribute '${name}' of ${obj}`;
      const m = h5call(this.path, what, () => this.M.get_attribute_metadata(this.src, obj, name));
      if (!copyable(m) || m.shape === null) throw this.unsupported(what, m);
      this.withBuffer(m.size * m.total_size, (ptr) => {
        h5call(this.path, what, () => this.M.get_attribute_data(this.src, obj, name, BigInt(ptr)));
        this.M.create_attribute(this.dst, obj, name, BigInt(ptr), creationMetadata(m, m.shape!, false));
      });
    }
  }

  /** Copies a dataset and its attributes unchanged. */
  dataset(name: string): void {
    const what = `dataset '${name}'`;
    const m = h5call(this.path, what, () => this.M.get_dataset_metadata(this.src, name));
    if (!copyable(m) || m.shape === null) throw this.unsupported(what, m);
    this.withBuffer(m.size * m.total_size, (ptr) => {
      h5call(this.path, what, () => this.M.get_dataset_data(this.src, name, null, null, null, BigInt(ptr)));
      this.M.create_dataset(this.dst, name, BigInt(ptr), creationMetadata(m, m.shape!, true));
    });
    this.attributes(name);
  }

  /** Writes `bytes` as dataset `name` with the type of `like` and the given shape. */
  create(name: string, like: H5Metadata, shape: number[], bytes: Uint8Array): void {
    this.withBuffer(bytes.byteLength, (ptr) => {
      this.M.HEAPU8.set(bytes, ptr);
      this.M.create_dataset(this.dst, name, BigInt(ptr), creationMetadata(like, shape, false));
    });
  }

  /** Writes one float64 value per attribute name, with the type of `like` (e.g. FLASH's 'minimum', 'maximum'). */
  scalarAttributes(obj: string, values: Map<string, { like: H5Metadata; value: number }>): void {
    for (const [name, { like, value }] of values) {
      const bytes = toType(Float64Array.of(value), like, `attribute '${name}'`, this.path);
      this.withBuffer(bytes.byteLength, (ptr) => {
        this.M.HEAPU8.set(bytes, ptr);
        this.M.create_attribute(this.dst, obj, name, BigInt(ptr), creationMetadata(like, like.shape ?? [1], false));
      });
    }
  }
}

/** Values as the bytes of a float32/float64/integer type (little-endian). */
function toType(values: Float64Array, m: H5Metadata, what: string, path: string): Uint8Array {
  let out: ArrayBufferView;
  if (m.type === H5T_FLOAT && m.size === 8) out = values;
  else if (m.type === H5T_FLOAT && m.size === 4) out = new Float32Array(values);
  else throw new FlashFileError('UNSUPPORTED_DATATYPE', `${path}: ${what} is stored as HDF5 class ${m.type}, ${m.size} bytes; amrgrav writes float32 or float64 variables`);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** Fixed-length strings, padded with NULs (FLASH's 'unknown names' are NUL-terminated ASCII). */
function fixedStrings(names: string[], width: number): Uint8Array {
  const out = new Uint8Array(names.length * width);
  names.forEach((s, i) => out.set(Buffer.from(s, 'latin1').subarray(0, width), i * width));
  return out;
}

/**
 * Writes `output`: a copy of the FLASH file `input` in which each variable of `variables` (all blocks, file
 * order, nblocks * nzb * nyb * nxb values) replaces the stored one, or is added (after the others in 'unknown
 * names', stored like the file's first variable), and each dataset of `opts.datasets` is replaced in place (same
 * type and shape). Everything else is copied byte for byte. Atomic (a temporary
 * file renamed over the target), and the output may never be the input.
 * @throws OutputFileError for a bad output path or a failed write; FlashFileError 'CORRUPT_FILE' when the input
 *   cannot be read, 'UNSUPPORTED_DATATYPE' for an HDF5 type that cannot be copied exactly, 'BAD_SHAPE' for values
 *   of the wrong length, 'MISSING_DATASET' for a dataset of `opts.datasets` that is not in the input or is a variable.
 */
export async function copyFlashFileWith(input: string, output: string, variables: Map<string, Float64Array>, opts: FlashCopyOptions = {}): Promise<void> {
  const h5 = await h5wasm();
  const M = await h5module();
  const src = await openHdf5(input);
  try {
    await writeAtomically(output, [input, ...(opts.inputs ?? [])], async (temp) => {
      let dst: H5File | null = null;
      try {
        dst = new h5.File(temp, 'w');
        await copyInto(M, src, dst, input, variables, opts);
      } finally {
        dst?.close();
      }
    });
  } finally {
    try {
      src.close();
    } catch {
      // the copy's own outcome is what matters
    }
  }
}

async function copyInto(M: H5Module, src: H5File, dst: H5File, path: string, variables: Map<string, Float64Array>, opts: FlashCopyOptions): Promise<void> {
  const sid = (src as unknown as { file_id: bigint }).file_id;
  const did = (dst as unknown as { file_id: bigint }).file_id;
  const c = new Copier(M, sid, did, path);
  const all = h5call(path, 'the list of objects', () => M.get_names(sid, '/', true)).map((n) => (n.startsWith('/') ? n : `/${n}`));
  const namesMeta = h5call(path, "dataset 'unknown names'", () => M.get_dataset_metadata(sid, '/unknown names'));
  const stored = h5call(path, "dataset 'unknown names'", () => {
    const v = (src.get('unknown names') as unknown as { value: unknown }).value;
    return (Array.isArray(v) ? v : [v]).map((s) => String(s).replace(/[\s\0]+$/, '').trim());
  });
  const added = [...variables.keys()].filter((v) => !stored.includes(v));
  const others = opts.datasets ?? new Map<string, Float64Array>();
  for (const name of others.keys()) {
    if (variables.has(name) || stored.includes(name) || !all.includes(`/${name}`)) {
      throw new FlashFileError('MISSING_DATASET', `${path}: cannot replace '${name}': ${all.includes(`/${name}`) ? 'it is a variable' : 'no such dataset'}`);
    }
  }
  const firstVar = stored.find((v) => all.includes(`/${v}`));
  const varMeta = firstVar ? h5call(path, `dataset '${firstVar}'`, () => M.get_dataset_metadata(sid, `/${firstVar}`)) : null;
  const steps = all.length + added.length;
  let done = 0;
  const tick = async (name: string) => {
    opts.onProgress?.(++done, steps, name);
    await new Promise((r) => setImmediate(r)); // lets a signal handler run between datasets
  };
  const minMax = (obj: string, values: Float64Array, like: H5Metadata | null) => {
    const attrs = new Map<string, { like: H5Metadata; value: number }>();
    if (!like) return attrs;
    const have = new Set(h5call(path, `the attributes of ${obj}`, () => M.get_attribute_names(sid, obj)));
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of values) {
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    for (const [name, value] of [['minimum', lo], ['maximum', hi]] as const) {
      if (have.has(name)) attrs.set(name, { like: h5call(path, `attribute '${name}' of ${obj}`, () => M.get_attribute_metadata(sid, obj, name)), value });
    }
    return attrs;
  };

  c.attributes('/');
  for (const obj of all) {
    const type = h5call(path, obj, () => M.get_type(sid, obj));
    const name = obj.slice(1);
    if (type === M.H5G_GROUP) {
      M.create_group(did, obj, false);
      c.attributes(obj);
    } else if (type === M.H5G_DATASET && name === 'unknown names' && added.length > 0) {
      const names = [...stored, ...added];
      const width = namesMeta.size;
      if (namesMeta.type !== H5T_STRING || namesMeta.vlen || added.some((n) => n.length > width)) {
        throw new FlashFileError('UNSUPPORTED_DATATYPE', `${path}: 'unknown names' holds ${namesMeta.vlen ? 'variable-length' : `${width}-byte`} strings; cannot add ${added.join(', ')}`);
      }
      c.create(obj, namesMeta, [names.length, ...(namesMeta.shape ?? [0, 1]).slice(1)], fixedStrings(names, width));
      c.attributes(obj);
    } else if (type === M.H5G_DATASET && (variables.has(name) || others.has(name))) {
      const m = h5call(path, `dataset '${name}'`, () => M.get_dataset_metadata(sid, obj));
      const values = variables.get(name) ?? others.get(name)!;
      if (values.length !== m.total_size) {
        throw new FlashFileError('BAD_SHAPE', `${path}: '${name}' is stored with ${m.total_size} values; ${values.length} were given`);
      }
      c.create(obj, m, m.shape ?? [], toType(values, m, `dataset '${name}'`, path));
      const mm = minMax(obj, values, m);
      c.attributes(obj, new Set(mm.keys()));
      c.scalarAttributes(obj, mm);
    } else if (type === M.H5G_DATASET) {
      c.dataset(obj);
    } else {
      throw new FlashFileError('UNSUPPORTED_DATATYPE', `${path}: '${name}' is a link or named type (HDF5 object type ${type}); amrgrav copies groups and datasets only`);
    }
    await tick(name);
  }
  for (const name of added) {
    if (!varMeta) throw new FlashFileError('MISSING_DATASET', `${path}: no stored variable to model '${name}' on`);
    const values = variables.get(name)!;
    if (values.length !== varMeta.total_size) {
      throw new FlashFileError('BAD_SHAPE', `${path}: '${name}' has ${values.length} values; the file's variables hold ${varMeta.total_size}`);
    }
    const obj = `/${name}`;
    c.create(obj, varMeta, varMeta.shape ?? [], toType(values, varMeta, `dataset '${name}'`, path));
    c.scalarAttributes(obj, minMax(`/${firstVar}`, values, varMeta));
    await tick(name);
  }
}
