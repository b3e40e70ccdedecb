/**
 * \file flashFormat.ts
 * \brief The FLASH HDF5 file (format version 9, PARAMESH grid) as plain data: block metadata, parameter tables,
 * variables. What the reader returns and the writer takes. Layout as in FLASH4's io/IO/IOMain/hdf5 output:
 * per-block datasets have the block as their first axis; variables are [nblocks, nzb, nyb, nxb], x fastest.
 */

/** FLASH's typed name/value tables. Names are stored as 80-character space-padded strings. */
export interface FlashParameters {
  integerScalars: Map<string, number>;
  realScalars: Map<string, number>;
  logicalScalars: Map<string, boolean>;
  stringScalars: Map<string, string>;
  integerRuntime: Map<string, number>;
  realRuntime: Map<string, number>;
  logicalRuntime: Map<string, boolean>;
  stringRuntime: Map<string, string>;
}

export type FlashParameterKind = 'integer' | 'real' | 'logical' | 'string';

/** Each table of {@link FlashParameters}: its dataset name and value kind. */
export const PARAMETER_TABLES: readonly { key: keyof FlashParameters; dataset: string; kind: FlashParameterKind }[] = [
  { key: 'integerScalars', dataset: 'integer scalars', kind: 'integer' },
  { key: 'realScalars', dataset: 'real scalars', kind: 'real' },
  { key: 'logicalScalars', dataset: 'logical scalars', kind: 'logical' },
  { key: 'stringScalars', dataset: 'string scalars', kind: 'string' },
  { key: 'integerRuntime', dataset: 'integer runtime parameters', kind: 'integer' },
  { key: 'realRuntime', dataset: 'real runtime parameters', kind: 'real' },
  { key: 'logicalRuntime', dataset: 'logical runtime parameters', kind: 'logical' },
  { key: 'stringRuntime', dataset: 'string runtime parameters', kind: 'string' },
];

/** Width of parameter names and string values in the tables (FLASH's MAX_STRING_LENGTH). */
export const FLASH_STRING_LENGTH = 80;
/** Width of a variable name in 'unknown names'. */
export const FLASH_VARIABLE_NAME_LENGTH = 4;
/** The file format version written (FLASH 3 and 4 write 9). */
export const FLASH_FORMAT_VERSION = 9;
/** gid entry of a face on the domain boundary (FLASH's OUTFLOW, as in FLASH 4.4's own files). */
export const FLASH_BOUNDARY_GID = -32;
/** 'node type' of a leaf block (PARAMESH: 1 leaf, 2 parent of leaves, 3 other ancestors). */
export const FLASH_LEAF = 1;

/** A dataset the reader does not interpret, kept as it is so a copy of the file loses nothing. */
export interface RawDataset {
  name: string;
  shape: number[];
  /** h5wasm dtype: '<i', '<f', '<d', 'S4', or [[member, dtype], ...] for compound datasets. */
  dtype: string | [string, string][];
  /** Typed array (row-major), strings, or for compound datasets one column per member. */
  data: ArrayLike<number> | string[] | Map<string, ArrayLike<number> | string[]>;
}

/** A FLASH file's content, or a range of its blocks. */
export interface FlashData {
  /** 1, 2 or 3 (the 'dimensionality' integer scalar, else inferred from nyb/nzb). */
  dimensionality: number;
  nxb: number;
  nyb: number;
  nzb: number;
  /** Blocks in the file. */
  totalBlocks: number;
  /** First block held here (0-based) and how many: all of them unless a block range was read. */
  blockStart: number;
  blockCount: number;
  /** Per block: 'refine level' (1 = root), 'node type' (1 = leaf). */
  refineLevel: Int32Array;
  nodeType: Int32Array;
  /**
   * 'gid', blockCount x gidColumns, 1-based block numbers: 2 * dim face neighbours (-1 none at that level,
   * <= -20 a domain boundary), the parent (-1 for a root block), then 2^dim children (-1 for a leaf).
   */
  gid: Int32Array;
  gidColumns: number;
  /** 'bounding box' [block][axis][lo, hi], 'coordinates' (block centres) and 'block size', [block][axis]; cm. */
  boundingBox: Float64Array;
  coordinates: Float64Array;
  blockSize: Float64Array;
  /** Variables held, in file order ('unknown names' order); each blockCount * nzb * nyb * nxb values. */
  variables: Map<string, Float64Array>;
  /** Every variable named in the file's 'unknown names' (some may not have been read). */
  unknownNames: string[];
  /** Storage type: plot files hold float32 variables and metadata, checkpoints float64. */
  variablePrecision: 'float32' | 'float64';
  metadataPrecision: 'float32' | 'float64';
  /** 'file format version' from 'sim info' (9 for FLASH 3/4). */
  formatVersion: number;
  params: FlashParameters;
  /** 'sim info' and every other dataset not interpreted above (e.g. 'which child', 'processor number'). */
  extra: RawDataset[];
}

/** Empty parameter tables. */
export function emptyParameters(): FlashParameters {
  return {
    integerScalars: new Map(),
    realScalars: new Map(),
    logicalScalars: new Map(),
    stringScalars: new Map(),
    integerRuntime: new Map(),
    realRuntime: new Map(),
    logicalRuntime: new Map(),
    stringRuntime: new Map(),
  };
}

/** Number of gid columns for a dimensionality: faces, parent, children. */
export function gidColumnsFor(dim: number): number {
  return 2 * dim + 1 + 2 ** dim;
}

/** Cells per block. */
export function cellsPerBlock(d: Pick<FlashData, 'nxb' | 'nyb' | 'nzb'>): number {
  return d.nxb * d.nyb * d.nzb;
}
