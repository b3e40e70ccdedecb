/**
 * Writes a mesh's cells to a file for the native timing tools (amrgrav_gpu_timing --fmm-cells): n as an int64, then
 * x, y, z, mass and size as n float64 each, little-endian. Meshes: maclaurinL (the MacLaurin spheroid of L levels,
 * `validate maclaurin`'s mesh) and amrL[:seed] (validation/randomAmr.ts, 4 root blocks a side).
 * Run: `node dist/bench/dumpCells.js --mesh maclaurin7 --out /tmp/mac7.bin`.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { maclaurinProblem } from '../validation/maclaurinSetup.js';
import { randomAmrCells } from '../validation/randomAmr.js';

interface Arrays { x: Float64Array; y: Float64Array; z: Float64Array; mass: Float64Array; size: Float64Array }

function meshCells(name: string): Arrays {
  const mac = /^maclaurin(\d+)$/.exec(name);
  if (mac) return maclaurinProblem({ levels: Number(mac[1]) }).cells;
  const amr = /^amr(\d+)(?::(\d+))?$/.exec(name);
  if (amr) return randomAmrCells({ levels: Number(amr[1]), seed: Number(amr[2] ?? 3), rootBlocks: 4 });
  throw new Error(`--mesh '${name}': expected maclaurinL or amrL[:seed]`);
}

const { values } = parseArgs({ options: { mesh: { type: 'string' }, out: { type: 'string' } } });
if (!values.mesh || !values.out) throw new Error('usage: dumpCells --mesh maclaurin7 --out FILE');
const c = meshCells(values.mesh);
const fd = openSync(values.out, 'w');
writeSync(fd, new BigInt64Array([BigInt(c.x.length)]));
for (const a of [c.x, c.y, c.z, c.mass, c.size]) writeSync(fd, a);
closeSync(fd);
console.log(JSON.stringify({ mesh: values.mesh, cells: c.x.length, out: values.out }));
