/**
 * AmrMesh: a block-structured octree (PARAMESH/FLASH style). Level-1 blocks tile the domain on a rootBlocks grid;
 * refining a block splits it into 8 children of half the size, each with nxb x nyb x nzb cells. Blocks are never
 * removed, so block indices stay valid; non-leaf blocks keep their (stale) variable values.
 */
import { BlockVariables } from './blockVariables.js';
import { MeshError } from './errors.js';
import { compareMorton } from './morton.js';
import { resolveMeshOptions } from './options.js';
import type { Block, MeshOptions, ResolvedMeshOptions, Vec3 } from './types.js';

interface BlockRecord {
  level: number;
  lo: Vec3;
  hi: Vec3;
  parent: number;
  children: number[];
  coord: Vec3;
}

export class AmrMesh {
  readonly options: ResolvedMeshOptions;
  private readonly records: BlockRecord[] = [];
  /** byLevel[level]: linear block index at that level -> block index; the (level, coord) hash map. */
  private readonly byLevel: Map<number, number>[] = [];
  private readonly vars: BlockVariables;
  private leafCache: number[] | null = null;

  /** @throws MeshError('INVALID_OPTION') for bad options; see {@link MeshOptions} for defaults. */
  constructor(options: MeshOptions = {}) {
    this.options = resolveMeshOptions(options);
    this.vars = new BlockVariables(this.cellsPerBlock);
    for (let level = 0; level <= this.options.lrefineMax; level++) this.byLevel.push(new Map());
    const [nx, ny, nz] = this.options.rootBlocks;
    for (let k = 0; k < nz; k++) for (let j = 0; j < ny; j++) for (let i = 0; i < nx; i++) this.addBlock(1, [i, j, k], -1);
    this.vars.resize(this.records.length);
  }

  get blockCount(): number {
    return this.records.length;
  }

  get cellsPerBlock(): number {
    return this.options.nxb * this.options.nyb * this.options.nzb;
  }

  /** All blocks, indexed by block number (leaves and parents). */
  get blocks(): readonly Block[] {
    return this.records;
  }

  block(b: number): Block {
    return this.records[this.checkBlock(b)];
  }

  isLeaf(b: number): boolean {
    return this.records[this.checkBlock(b)].children.length === 0;
  }

  /** Number of blocks along each axis if `level` were uniformly filled: rootBlocks * 2^(level-1). */
  blocksPerAxis(level: number): Vec3 {
    const f = 2 ** (level - 1);
    const r = this.options.rootBlocks;
    return [r[0] * f, r[1] * f, r[2] * f];
  }

  /** Index of the block at (level, coord), or -1 if it does not exist (not refined that far, or outside the domain). */
  findBlock(level: number, coord: Readonly<Vec3>): number {
    const map = this.byLevel[level];
    if (!map) return -1;
    const n = this.blocksPerAxis(level);
    for (let d = 0; d < 3; d++) if (coord[d] < 0 || coord[d] >= n[d]) return -1;
    return map.get(coord[0] + n[0] * (coord[1] + n[1] * coord[2])) ?? -1;
  }

  /**
   * Leaf blocks ordered along the Morton curve of the whole mesh: by the Morton key of each leaf's lower corner
   * counted in blocks of level lrefineMax. Contiguous runs of this list are compact, so it is how work is split.
   */
  leafBlocks(): number[] {
    if (!this.leafCache) {
      const lmax = this.options.lrefineMax;
      const leaves: number[] = [];
      const corner: Vec3[] = [];
      for (let b = 0; b < this.records.length; b++) {
        const r = this.records[b];
        if (r.children.length > 0) continue;
        const f = 2 ** (lmax - r.level);
        leaves.push(b);
        corner[b] = [r.coord[0] * f, r.coord[1] * f, r.coord[2] * f];
      }
      leaves.sort((a, b) => compareMorton(corner[a], corner[b]));
      this.leafCache = leaves;
    }
    return this.leafCache.slice();
  }

  /** Cell sides [dx, dy, dz] of block b, cm. */
  blockCellSize(b: number): Vec3 {
    const { level } = this.records[this.checkBlock(b)];
    const o = this.options;
    const n = this.blocksPerAxis(level);
    return [
      (o.domainHi[0] - o.domainLo[0]) / (n[0] * o.nxb),
      (o.domainHi[1] - o.domainLo[1]) / (n[1] * o.nyb),
      (o.domainHi[2] - o.domainLo[2]) / (n[2] * o.nzb),
    ];
  }

  /** Centre of cell (i, j, k) of block b, cm. */
  cellCentre(b: number, i: number, j: number, k: number): Vec3 {
    const { lo } = this.records[this.checkBlock(b)];
    const h = this.blockCellSize(b);
    return [lo[0] + (i + 0.5) * h[0], lo[1] + (j + 0.5) * h[1], lo[2] + (k + 0.5) * h[2]];
  }

  /**
   * Splits leaf b into 8 children (Morton order) and fills their variables by injection of the parent cell values.
   * @returns the indices of the children.
   * @throws MeshError 'NOT_A_LEAF' if b has children, 'MAX_LEVEL' if b is at lrefineMax.
   */
  refineBlock(b: number): number[] {
    const r = this.records[this.checkBlock(b)];
    if (r.children.length > 0) throw new MeshError('NOT_A_LEAF', `block ${b} is already refined`);
    if (r.level >= this.options.lrefineMax) {
      throw new MeshError(
        'MAX_LEVEL',
        `cannot refine block ${b}: it is at level ${r.level} and lrefineMax is ${this.options.lrefineMax}`,
      );
    }
    const children: number[] = [];
    for (let octant = 0; octant < 8; octant++) {
      const coord: Vec3 = [2 * r.coord[0] + (octant & 1), 2 * r.coord[1] + ((octant >> 1) & 1), 2 * r.coord[2] + (octant >> 2)];
      children.push(this.addBlock(r.level + 1, coord, b));
    }
    r.children = children;
    this.leafCache = null;
    this.vars.resize(this.records.length);
    const { nxb, nyb, nzb } = this.options;
    children.forEach((c, octant) => this.vars.injectFromParent(b, c, octant, nxb, nyb, nzb));
    return children.slice();
  }

  /** Adds a zero-filled per-cell variable; a no-op if it exists. */
  addVariable(name: string): void {
    this.vars.add(name);
  }

  hasVariable(name: string): boolean {
    return this.vars.has(name);
  }

  variableNames(): string[] {
    return this.vars.names();
  }

  /**
   * The values of a variable over all blocks, index ((b * nzb + k) * nyb + j) * nxb + i. Writes go to the mesh;
   * refinement may move the storage, so take the array again after refining.
   * @throws MeshError('UNKNOWN_VARIABLE') naming the variables that exist.
   */
  variable(name: string): Float64Array {
    return this.vars.get(name);
  }

  private addBlock(level: number, coord: Vec3, parent: number): number {
    const o = this.options;
    const n = this.blocksPerAxis(level);
    const lo: Vec3 = [0, 0, 0];
    const hi: Vec3 = [0, 0, 0];
    for (let d = 0; d < 3; d++) {
      // The same expression at every level (ext * c / n scales exactly by 2), so faces shared across levels
      // are bitwise equal; the domain's own faces are taken as given.
      const ext = o.domainHi[d] - o.domainLo[d];
      lo[d] = coord[d] === 0 ? o.domainLo[d] : o.domainLo[d] + (ext * coord[d]) / n[d];
      hi[d] = coord[d] + 1 === n[d] ? o.domainHi[d] : o.domainLo[d] + (ext * (coord[d] + 1)) / n[d];
    }
    const index = this.records.length;
    this.records.push({ level, lo, hi, parent, children: [], coord });
    this.byLevel[level].set(coord[0] + n[0] * (coord[1] + n[1] * coord[2]), index);
    return index;
  }

  private checkBlock(b: number): number {
    if (!Number.isInteger(b) || b < 0 || b >= this.records.length) {
      throw new MeshError('INVALID_BLOCK', `no block ${b}: the mesh has ${this.records.length} blocks`);
    }
    return b;
  }
}
