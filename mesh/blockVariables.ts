/**
 * Named per-cell variables over all blocks, laid out like FLASH's unk: one Float64Array per variable with
 * index ((b * nzb + k) * nyb + j) * nxb + i. Storage grows geometrically as blocks are added.
 */
import { MeshError } from './errors.js';

export class BlockVariables {
  private readonly buffers = new Map<string, Float64Array>();
  private capacityBlocks = 0;
  private blocks = 0;

  constructor(private readonly cellsPerBlock: number) {}

  /** Creates a zero-filled variable; a no-op when it exists already. */
  add(name: string): void {
    if (typeof name !== 'string' || name.length === 0) {
      throw new MeshError('INVALID_OPTION', `variable name must be a non-empty string, got ${JSON.stringify(name)}`);
    }
    if (!this.buffers.has(name)) this.buffers.set(name, new Float64Array(this.capacityBlocks * this.cellsPerBlock));
  }

  has(name: string): boolean {
    return this.buffers.has(name);
  }

  names(): string[] {
    return [...this.buffers.keys()];
  }

  /**
   * A view of exactly blockCount * cellsPerBlock values. Adding blocks may move the storage, so a view taken
   * before refinement no longer aliases the variable afterwards: take it again.
   */
  get(name: string): Float64Array {
    const buf = this.buffers.get(name);
    if (!buf) {
      const known = this.buffers.size > 0 ? this.names().map((n) => `'${n}'`).join(', ') : 'none';
      throw new MeshError('UNKNOWN_VARIABLE', `unknown mesh variable '${name}' (variables: ${known}); add it with addVariable`);
    }
    return buf.subarray(0, this.blocks * this.cellsPerBlock);
  }

  /** Makes room for `count` blocks; existing values are kept, new ones are zero. */
  resize(count: number): void {
    if (count > this.capacityBlocks) {
      const capacity = Math.max(count, Math.ceil(this.capacityBlocks * 1.5), 8);
      for (const [name, old] of this.buffers) {
        const grown = new Float64Array(capacity * this.cellsPerBlock);
        grown.set(old);
        this.buffers.set(name, grown);
      }
      this.capacityBlocks = capacity;
    }
    this.blocks = count;
  }

  /** Each cell of block `child` (one octant of `parent`) takes the value of the parent cell covering it. */
  injectFromParent(parent: number, child: number, octant: number, nxb: number, nyb: number, nzb: number): void {
    const ox = (octant & 1) * nxb;
    const oy = ((octant >> 1) & 1) * nyb;
    const oz = ((octant >> 2) & 1) * nzb;
    const p0 = parent * this.cellsPerBlock;
    for (const buf of this.buffers.values()) {
      let c = child * this.cellsPerBlock;
      for (let k = 0; k < nzb; k++) {
        const pk = (oz + k) >> 1;
        for (let j = 0; j < nyb; j++) {
          const row = p0 + (pk * nyb + ((oy + j) >> 1)) * nxb;
          for (let i = 0; i < nxb; i++) buf[c++] = buf[row + ((ox + i) >> 1)];
        }
      }
    }
  }
}
