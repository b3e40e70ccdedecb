/**
 * \file flashMesh.ts
 * \brief FLASH file data <-> {@link AmrMesh}: rebuilds the block octree of a 3-D FLASH file (root grid, then
 * each level's blocks by refining their parents) with a map from file blocks to mesh blocks, and lays a mesh out
 * as FLASH data (blocks in depth-first Morton order, as PARAMESH numbers them, with gid and which child).
 */
import { AmrMesh } from './amrMesh.js';
import { FlashFileError } from './errors.js';
import {
  FLASH_BOUNDARY_GID,
  FLASH_LEAF,
  cellsPerBlock,
  emptyParameters,
  gidColumnsFor,
  type FlashData,
  type FlashParameters,
} from './flashFormat.js';
import type { Vec3 } from './types.js';

export interface FlashMesh {
  mesh: AmrMesh;
  /** meshBlock[fileBlock]: the mesh block of each block of the file. */
  meshBlock: Int32Array;
}

/** Relative slack when snapping float32 bounding boxes onto the block grid of their level. */
const GRID_TOLERANCE = 1e-3;

function domainOf(d: FlashData): { lo: Vec3; hi: Vec3; roots: Vec3 } {
  const rt = d.params.realRuntime;
  const lo: Vec3 = [Infinity, Infinity, Infinity];
  const hi: Vec3 = [-Infinity, -Infinity, -Infinity];
  let rootCount = 0;
  let rootSide: Vec3 = [0, 0, 0];
  for (let b = 0; b < d.blockCount; b++) {
    if (d.refineLevel[b] !== 1) continue;
    rootCount++;
    for (let a = 0; a < 3; a++) {
      lo[a] = Math.min(lo[a], d.boundingBox[b * 6 + 2 * a]);
      hi[a] = Math.max(hi[a], d.boundingBox[b * 6 + 2 * a + 1]);
      rootSide[a] = d.boundingBox[b * 6 + 2 * a + 1] - d.boundingBox[b * 6 + 2 * a];
    }
  }
  if (rootCount === 0) throw new FlashFileError('BAD_MESH', `the file has no level-1 (root) blocks`);
  // the runtime parameters hold the domain in full precision; bounding boxes may be float32
  const axes = ['x', 'y', 'z'];
  for (let a = 0; a < 3; a++) {
    const pl = rt.get(`${axes[a]}min`);
    const ph = rt.get(`${axes[a]}max`);
    if (pl !== undefined && ph !== undefined && Math.abs(pl - lo[a]) <= GRID_TOLERANCE * (ph - pl) && Math.abs(ph - hi[a]) <= GRID_TOLERANCE * (ph - pl)) {
      lo[a] = pl;
      hi[a] = ph;
    }
  }
  const roots = [0, 1, 2].map((a) => Math.round((hi[a] - lo[a]) / rootSide[a])) as Vec3;
  if (roots[0] * roots[1] * roots[2] !== rootCount) {
    throw new FlashFileError('BAD_MESH', `${rootCount} root blocks do not tile the domain as a ${roots.join(' x ')} grid`);
  }
  return { lo, hi, roots };
}

/**
 * Rebuilds the mesh of a whole 3-D FLASH file and copies every variable held (on all blocks, leaves and parents).
 * @throws FlashFileError 'UNSUPPORTED_DIMENSIONALITY' for 1-D and 2-D files (the solver is 3-D), 'BAD_MESH'
 *   when blocks are missing, do not lie on their level's grid or children do not come in complete sets of 8.
 */
export function flashToMesh(d: FlashData): FlashMesh {
  if (d.dimensionality !== 3) {
    throw new FlashFileError(
      'UNSUPPORTED_DIMENSIONALITY',
      `the file is ${d.dimensionality}-D (nxb, nyb, nzb = ${d.nxb}, ${d.nyb}, ${d.nzb}); amrgrav solves 3-D meshes only`,
    );
  }
  if (d.blockStart !== 0 || d.blockCount !== d.totalBlocks) {
    throw new FlashFileError('BAD_MESH', `a mesh needs every block: only blocks ${d.blockStart}..${d.blockStart + d.blockCount - 1} of ${d.totalBlocks} were read`);
  }
  const { lo, hi, roots } = domainOf(d);
  let lmax = 1;
  for (const l of d.refineLevel) lmax = Math.max(lmax, l);
  const mesh = new AmrMesh({ domainLo: lo, domainHi: hi, rootBlocks: roots, nxb: d.nxb, nyb: d.nyb, nzb: d.nzb, lrefineMax: lmax });
  const order = Array.from({ length: d.blockCount }, (_, b) => b).sort((a, b) => d.refineLevel[a] - d.refineLevel[b]);
  const meshBlock = new Int32Array(d.blockCount).fill(-1);
  const taken = new Uint8Array(d.blockCount);
  for (const b of order) {
    const level = d.refineLevel[b];
    if (level < 1) throw new FlashFileError('BAD_MESH', `block ${b + 1} has refine level ${level}`);
    const n = mesh.blocksPerAxis(level);
    const coord = [0, 1, 2].map((a) => {
      const side = (hi[a] - lo[a]) / n[a];
      const c = (d.boundingBox[b * 6 + 2 * a] - lo[a]) / side;
      if (Math.abs(c - Math.round(c)) > GRID_TOLERANCE) {
        throw new FlashFileError('BAD_MESH', `block ${b + 1} (level ${level}) does not lie on the block grid of its level on axis ${a}`);
      }
      return Math.round(c);
    }) as Vec3;
    let m = mesh.findBlock(level, coord);
    if (m < 0 && level > 1) {
      const parent = mesh.findBlock(level - 1, [coord[0] >> 1, coord[1] >> 1, coord[2] >> 1]);
      if (parent < 0 || !mesh.isLeaf(parent)) {
        throw new FlashFileError('BAD_MESH', `block ${b + 1} (level ${level}) has no parent block in the file`);
      }
      mesh.refineBlock(parent);
      m = mesh.findBlock(level, coord);
    }
    if (m < 0) throw new FlashFileError('BAD_MESH', `block ${b + 1} (level ${level}) lies outside the root grid`);
    if (m >= d.blockCount || taken[m]++) throw new FlashFileError('BAD_MESH', `block ${b + 1} duplicates another block of level ${level}`);
    meshBlock[b] = m;
  }
  if (mesh.blockCount !== d.blockCount) {
    throw new FlashFileError('BAD_MESH', `the file has ${d.blockCount} blocks but its refined blocks need ${mesh.blockCount} (children come in sets of 8)`);
  }
  for (let b = 0; b < d.blockCount; b++) {
    if ((d.nodeType[b] === FLASH_LEAF) !== mesh.isLeaf(meshBlock[b])) {
      throw new FlashFileError('BAD_MESH', `block ${b + 1}: 'node type' ${d.nodeType[b]} disagrees with the block tree`);
    }
  }
  for (const [name, values] of d.variables) copyVariable(d, name, values, mesh, meshBlock, 'toMesh');
  return { mesh, meshBlock };
}

/** Copies a variable between file-ordered blocks and mesh-ordered blocks. */
function copyVariable(d: FlashData, name: string, fileValues: Float64Array, mesh: AmrMesh, meshBlock: Int32Array, dir: 'toMesh' | 'toFile'): void {
  const cpb = cellsPerBlock(d);
  mesh.addVariable(name);
  const mv = mesh.variable(name);
  for (let b = 0; b < d.blockCount; b++) {
    const f0 = b * cpb;
    const m0 = meshBlock[b] * cpb;
    if (dir === 'toMesh') mv.set(fileValues.subarray(f0, f0 + cpb), m0);
    else fileValues.set(mv.subarray(m0, m0 + cpb), f0);
  }
}

/** Copies mesh variable `name` into the file data (added after the existing variables if new). */
export function meshVariableToFlash(fm: FlashMesh, d: FlashData, name: string): void {
  let values = d.variables.get(name);
  if (!values) {
    values = new Float64Array(d.blockCount * cellsPerBlock(d));
    d.variables.set(name, values);
    if (!d.unknownNames.includes(name)) d.unknownNames.push(name);
  }
  copyVariable(d, name, values, fm.mesh, fm.meshBlock, 'toFile');
}

export interface MeshToFlashOptions {
  /** Mesh variables to store. Default: all. */
  variables?: string[];
  /** Extra runtime parameters (e.g. the problem's), merged over the ones derived from the mesh. */
  params?: Partial<FlashParameters>;
  /** Storage type of the variables and metadata. Default 'float64' (a checkpoint). */
  precision?: 'float32' | 'float64';
}

/** Depth-first Morton order from each root block: the order PARAMESH numbers blocks in. */
function depthFirst(mesh: AmrMesh): number[] {
  const out: number[] = [];
  const visit = (b: number) => {
    out.push(b);
    for (const c of mesh.block(b).children) visit(c);
  };
  for (let b = 0; b < mesh.blockCount; b++) if (mesh.block(b).level === 1) visit(b);
  return out;
}

/**
 * Lays a mesh out as FLASH data (a checkpoint by default) with the parameters yt and FLASH need: nxb..nzb,
 * dimensionality 3, globalnumblocks, time (0), geometry cartesian, nblockx..z, lrefine_min/max, xmin..zmax.
 */
export function meshToFlash(mesh: AmrMesh, opts: MeshToFlashOptions = {}): FlashData & { fileBlockOf: Int32Array } {
  const o = mesh.options;
  const order = depthFirst(mesh);
  const n = order.length;
  const fileBlockOf = new Int32Array(n);
  order.forEach((m, b) => (fileBlockOf[m] = b));
  const cols = gidColumnsFor(3);
  const d: FlashData & { fileBlockOf: Int32Array } = {
    dimensionality: 3,
    nxb: o.nxb,
    nyb: o.nyb,
    nzb: o.nzb,
    totalBlocks: n,
    blockStart: 0,
    blockCount: n,
    refineLevel: new Int32Array(n),
    nodeType: new Int32Array(n),
    gid: new Int32Array(n * cols),
    gidColumns: cols,
    boundingBox: new Float64Array(n * 6),
    coordinates: new Float64Array(n * 3),
    blockSize: new Float64Array(n * 3),
    variables: new Map(),
    unknownNames: [],
    variablePrecision: opts.precision ?? 'float64',
    metadataPrecision: opts.precision ?? 'float64',
    formatVersion: 9,
    params: emptyParameters(),
    extra: [],
    fileBlockOf,
  };
  const whichChild = new Int32Array(n);
  let lmax = 1;
  order.forEach((m, b) => {
    const blk = mesh.block(m);
    lmax = Math.max(lmax, blk.level);
    d.refineLevel[b] = blk.level;
    // PARAMESH: 1 leaf, 2 parent of leaves only, 3 any other ancestor
    d.nodeType[b] = blk.children.length === 0 ? 1 : blk.children.every((c) => mesh.isLeaf(c)) ? 2 : 3;
    for (let a = 0; a < 3; a++) {
      d.boundingBox[b * 6 + 2 * a] = blk.lo[a];
      d.boundingBox[b * 6 + 2 * a + 1] = blk.hi[a];
      d.coordinates[b * 3 + a] = 0.5 * (blk.lo[a] + blk.hi[a]);
      d.blockSize[b * 3 + a] = blk.hi[a] - blk.lo[a];
    }
    const g = b * cols;
    const nAxis = mesh.blocksPerAxis(blk.level);
    for (let a = 0; a < 3; a++) {
      for (const s of [-1, 1]) {
        const c: Vec3 = [blk.coord[0], blk.coord[1], blk.coord[2]];
        c[a] += s;
        const nb = c[a] < 0 || c[a] >= nAxis[a] ? -2 : mesh.findBlock(blk.level, c);
        d.gid[g + 2 * a + (s > 0 ? 1 : 0)] = nb === -2 ? FLASH_BOUNDARY_GID : nb < 0 ? -1 : fileBlockOf[nb] + 1;
      }
    }
    d.gid[g + 6] = blk.parent < 0 ? -1 : fileBlockOf[blk.parent] + 1;
    for (let k = 0; k < 8; k++) d.gid[g + 7 + k] = blk.children.length ? fileBlockOf[blk.children[k]] + 1 : -1;
    whichChild[b] = blk.parent < 0 ? -1 : mesh.block(blk.parent).children.indexOf(m) + 1;
  });
  const cpb = mesh.cellsPerBlock;
  for (const name of opts.variables ?? mesh.variableNames()) {
    const mv = mesh.variable(name);
    const fv = new Float64Array(n * cpb);
    order.forEach((m, b) => fv.set(mv.subarray(m * cpb, (m + 1) * cpb), b * cpb));
    d.variables.set(name, fv);
    d.unknownNames.push(name);
  }
  const p = d.params;
  for (const [k, v] of [['nxb', o.nxb], ['nyb', o.nyb], ['nzb', o.nzb], ['dimensionality', 3], ['globalnumblocks', n], ['nstep', 0]] as const) p.integerScalars.set(k, v);
  p.realScalars.set('time', 0);
  p.realScalars.set('dt', 0);
  p.stringScalars.set('geometry', 'cartesian');
  p.logicalScalars.set('double_precision', (opts.precision ?? 'float64') === 'float64');
  const ir = p.integerRuntime;
  ir.set('nblockx', o.rootBlocks[0]).set('nblocky', o.rootBlocks[1]).set('nblockz', o.rootBlocks[2]);
  ir.set('lrefine_min', 1).set('lrefine_max', Math.max(lmax, o.lrefineMax));
  const axes = ['x', 'y', 'z'];
  for (let a = 0; a < 3; a++) p.realRuntime.set(`${axes[a]}min`, o.domainLo[a]).set(`${axes[a]}max`, o.domainHi[a]);
  p.stringRuntime.set('geometry', 'cartesian').set('unitsystem', 'cgs');
  for (const [key, table] of Object.entries(opts.params ?? {})) {
    for (const [k, v] of table as Map<string, never>) (p[key as keyof FlashParameters] as Map<string, unknown>).set(k, v);
  }
  d.extra.push(
    { name: 'which child', shape: [n], dtype: '<i', data: whichChild },
    { name: 'processor number', shape: [n], dtype: '<i', data: new Int32Array(n) },
  );
  return d;
}
