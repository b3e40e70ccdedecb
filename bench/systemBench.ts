/**
 * Issue #18's costs (bench/RESULTS.md "Probes and target subsets"): a uniform grid with a smooth density, solved in
 * full, then with subsets of targets (random cells, and a compact block of cells as a per-level solve sees them), and
 * with probes added (random in the box): seconds (best of --repeat), groups walked, interactions. Each case is run
 * alternately with the full solve (best of each), so its ratio to the full solve holds on a machine whose load varies.
 *
 *   node dist/bench/systemBench.js [--grid 64] [--backend cpu|cuda] [--repeat 3] [--threads 0] [--json]
 */
import { GravitySolver } from '../solver/gravitySolver.js';
import { gridCells } from '../validation/gridCells.js';
import { rng } from '../validation/random.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}
const n = Number(arg('grid', '64'));
const backend = arg('backend', 'cpu') as 'cpu' | 'cuda';
const repeat = Number(arg('repeat', '3'));
const threads = Number(arg('threads', '0'));
const json = process.argv.includes('--json');

const cells = gridCells(n, (x, y, z) => 1 + 0.5 * Math.sin(2 * Math.PI * x) * Math.cos(2 * Math.PI * y) + z);
const N = cells.x.length;
const solver = new GravitySolver({ G: 1, theta: 0.5, order: 2, backend, threads });
const r = rng(18);

type Row = { case: string; targets: number; probes: number; seconds: number; walk: number; probeSeconds: number;
  fullSeconds: number; fullWalk: number;
  groupsWalked: number; groups: number; probeGroups: number; interactionsPerTarget: number; interactionsPerProbe: number };
const rows: Row[] = [];

async function measure(name: string, targets: Uint32Array | undefined, probes: number): Promise<void> {
  const p = { x: new Float64Array(probes), y: new Float64Array(probes), z: new Float64Array(probes) };
  for (let i = 0; i < probes; i++) { p.x[i] = r(); p.y[i] = r(); p.z[i] = r(); }
  let best: Row | undefined;
  let full = { seconds: Infinity, walk: Infinity };
  for (let k = 0; k < repeat + 1; k++) {  // the first call warms up (GPU buffers, thread pool)
    const f = (await solver.solveSystem({ cells })).stats.seconds;
    if (k > 0 && f.total < full.seconds) full = { seconds: f.total, walk: f.walk };
    const s = (await solver.solveSystem({ cells, ...(probes > 0 ? { probes: p } : {}) }, targets ? { targets } : {})).stats;
    const row: Row = {
      case: name, targets: s.system.targets, probes, seconds: s.seconds.total, walk: s.seconds.walk, fullSeconds: 0, fullWalk: 0,
      probeSeconds: s.system.secondsProbes, groupsWalked: s.system.targetGroups, groups: s.groups,
      probeGroups: s.system.probeGroups, interactionsPerTarget: s.interactionsPerCell,
      interactionsPerProbe: probes > 0 ? (s.system.probeApproxInteractions + s.system.probeDirectInteractions) / probes : 0,
    };
    if (k > 0 && (!best || row.seconds < best.seconds)) best = row;
  }
  best!.fullSeconds = full.seconds;
  best!.fullWalk = full.walk;
  rows.push(best!);
  if (json) console.log(JSON.stringify({ grid: n, backend, ...best }));
}

/** A random subset of `fraction` of the cells. */
function randomSubset(fraction: number): Uint32Array {
  const pick = new Uint32Array(Math.round(fraction * N));
  const all = Uint32Array.from({ length: N }, (_, i) => i);
  for (let i = 0; i < pick.length; i++) {
    const j = i + Math.floor(r() * (N - i));
    [all[i], all[j]] = [all[j], all[i]];
    pick[i] = all[i];
  }
  return pick;
}

/** The cells in the corner cube of side `f` of the box (a compact region, as one refinement level's patch). */
function cornerSubset(f: number): Uint32Array {
  const out: number[] = [];
  for (let i = 0; i < N; i++) if (cells.x[i] < f && cells.y[i] < f && cells.z[i] < f) out.push(i);
  return Uint32Array.from(out);
}

for (const f of [0.5, 0.1, 0.01]) await measure(`random ${f * 100}%`, randomSubset(f), 0);
for (const f of [0.5, 0.25]) await measure(`corner cube ${f}^3 (${(f ** 3 * 100).toFixed(1)}%)`, cornerSubset(f), 0);
for (const np of [1000, 10000, 100000]) await measure(`full + ${np} probes`, undefined, np);
await measure('no cell targets + 10000 probes', new Uint32Array(0), 10000);

if (!json) {
  console.log(`uniform ${n}^3 (${N} cells), theta 0.5, order 2, potential, ${backend}, best of ${repeat}`);
  console.log('case | cells computed | probes | total s (full solve beside it) | walk s (full) | probes s | groups walked / all | probe groups | interactions per cell | per probe');
  for (const w of rows)
    console.log(`${w.case} | ${w.targets} | ${w.probes} | ${w.seconds.toFixed(4)} (${w.fullSeconds.toFixed(4)}) | ` +
      `${w.walk.toFixed(4)} (${w.fullWalk.toFixed(4)}) | ${w.probeSeconds.toFixed(4)} | ` +
      `${w.groupsWalked} / ${w.groups} | ${w.probeGroups} | ${w.interactionsPerTarget.toFixed(0)} | ${w.interactionsPerProbe.toFixed(0)}`);
}
