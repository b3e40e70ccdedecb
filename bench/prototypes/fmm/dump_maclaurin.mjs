// Writes the library's MacLaurin-spheroid test mesh (validation/maclaurinSetup.ts: e 0.9, a1 0.25, floor 1e-10,
// surface blocks refined to the finest level, 4^3 sub-samples) as cells for fmm_proto --mesh file:
// uint64 count, then x, y, z, mass, size (count doubles each). Needs the library built (dist/).
// Usage: node bench/prototypes/fmm/dump_maclaurin.mjs LEVELS OUT.bin
import { writeFileSync } from 'node:fs';
import { maclaurinCells } from '../../../dist/validation/maclaurinSetup.js';

const levels = Number(process.argv[2] ?? 5);
const out = process.argv[3] ?? `/tmp/maclaurin${levels}.bin`;
const { cells } = maclaurinCells({ levels });
const n = cells.count;
const buf = Buffer.alloc(8 + 5 * 8 * n);
buf.writeBigUInt64LE(BigInt(n), 0);
[cells.x, cells.y, cells.z, cells.mass, cells.size].forEach((a, k) => {
  Buffer.from(a.buffer, a.byteOffset, 8 * n).copy(buf, 8 + k * 8 * n);
});
writeFileSync(out, buf);
console.log(`MacLaurin levels ${levels}: ${n} cells -> ${out}`);
