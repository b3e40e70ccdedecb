/**
 * Domain decomposition for standalone distributed runs (validate, bench, solve on a replicated mesh): cells in
 * space-filling-curve order (leaf blocks in Morton order, as extractCells gives them) cut into contiguous chunks
 * of equal cell count, whole blocks at a time (FLASH's scheme). In hydro coupling the caller's own cells are used
 * as given instead.
 */

/** The chunk [begin, end) of `units` equal units that rank `rank` of `size` owns (sizes differ by at most 1). */
export function chunkOf(units: number, rank: number, size: number): { begin: number; end: number } {
  return { begin: Math.floor((units * rank) / size), end: Math.floor((units * (rank + 1)) / size) };
}

/**
 * This rank's chunk of `cells`: `count` cells in units of `unitCells` consecutive cells (cells per block for a
 * mesh, so blocks stay whole), views into the same buffers (no copy). A `count` field is updated if present.
 */
export function rankChunk<T extends object>(cells: T, count: number, unitCells: number, rank: number, size: number): T {
  if (count % unitCells !== 0) throw new RangeError(`rankChunk: ${count} cells are not whole units of ${unitCells}`);
  const { begin, end } = chunkOf(count / unitCells, rank, size);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(cells)) {
    out[k] = ArrayBuffer.isView(v) && (v as Float64Array).length === count ? (v as Float64Array).subarray(begin * unitCells, end * unitCells) : v;
  }
  if ('count' in out) out.count = (end - begin) * unitCells;
  return out as T;
}
