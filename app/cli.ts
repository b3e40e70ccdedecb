#!/usr/bin/env node
/**
 * The `amrgrav` command line: `validate maclaurin`, `bench`, `solve`, `make`, `plot`. Tables for people, `--json`
 * for scripts, a progress bar on a terminal.
 */
import { parseArgs } from 'node:util';
import { AmrgravError } from '../solver/errors.js';
import { UsageError, choiceArg, intArg, numberArg } from './args.js';
import type { BoundaryChoice, SolverOptions } from '../solver/options.js';
import { abortAllRanks, mpiWorld } from '../solver/mpi/world.js';

const HELP: Record<string, string> = {
  main: `amrgrav: self-gravity Poisson solver for AMR meshes (Barnes-Hut tree, CPU/CUDA)

Usage:
  amrgrav validate maclaurin [options]   MacLaurin-spheroid validation against the analytic potential
  amrgrav validate periodic [options]    periodic and partly periodic boxes (Ewald) against analytic potentials
  amrgrav validate particles [options]   gas sphere + softened Plummer cluster + probes against direct sums
  amrgrav bench [options]                time solves on a uniform grid or the MacLaurin mesh
  amrgrav solve IN.h5 -o OUT.h5          solve a 3-D FLASH file; writes a copy with 'gpot' added
  amrgrav make maclaurin|sphere|uniform -o FILE.h5   write a test problem as a FLASH checkpoint
  amrgrav plot FILE.h5 --var V -o OUT.png            a slice of a FLASH file as a PNG
  amrgrav <command> --help               options of a command

Units are cgs throughout (G = 6.674e-8 cm^3 g^-1 s^-2 unless --G is given).
Under mpirun (mpirun -np N amrgrav validate|bench ...) the cells are split over the ranks in Morton order and
solved with locally essential trees; rank 0 prints, and the JSON carries "ranks".`,
  solver: `Solver options (all commands):
  --method M       tree | fmm (the fast multipole method: every box on the CPU and the GPU; CPU ranks under MPI in isolated or fully periodic boxes) [tree]
  --fmm-order P    fmm: expansion order, 3..7                                      [7]
  --fmm-theta T    fmm: opening angle, r_A + r_B < T R, in (0, 1)                  [0.65]
  --fmm-tol E      fmm: error tolerance relative to each side's potential bound, [0, 1)  [2e-4]
  --fmm-acc-tol E  fmm with --accel: the accelerations' tolerance relative to G M / side^2, [0, 1); 0 off  [5e-5]
  --theta T        opening angle of the MAC d > l/T + delta, in (0, 1]           [0.5]
  --order 1|2      1 = monopole, 2 = monopole + quadrupole                         [2]
  --mac M          barnes | bonsai                                                 [barnes]
  --walk W         box | vote (group acceptance: bounding box or per-cell warp vote) [box]
  --backend B      auto | cpu | cuda                                               [auto]
  --threads N      CPU threads, 0 = all                                            [0]
  --accel          also compute accelerations -grad(phi), cm s^-2
  --group-size N   points per walk group (CUDA: <= 64, two per lane above 32); auto: cells 64,
                   particles and probes 32                                         [auto]
  --leaf-size N    most cells in a tree leaf                                       [16]
  --boundary B     isolated, periodic (all axes, zero-mean potential) or the periodic axes, e.g. xy or z;
                   the domain (the unit box for bench) is the box                  [isolated]
  --softening K    particles' kernel: spline (radius 2.8 eps, Newtonian beyond) or plummer; eps is the
                   Plummer-equivalent length either way (-G m/eps at a particle's centre)    [spline]
  --self S         each cell's own term -c G m/h: lattice (c = 2.8373: a grid of point masses then sums to
                   the smooth density's potential), cube (c = 2.3801, the cell alone) or none     [lattice]
  --G VALUE        gravitational constant                                          [6.674e-8]
  --no-contrast    fully periodic boxes: the masses as given, not the density contrast (the mean removed)
  --json           print JSON only`,
  particles: `amrgrav validate particles [options]

Gas and softened particles in one system solve (issue #18): a uniform gas sphere (radius 0.25 cm, density 1
g/cm^3, centred in the unit box) on an AMR mesh refined at its surface, a Plummer cluster of equal-mass
particles inside it (scale radius 0.03 cm, truncated at 10 scale radii, 30% of the gas mass, softening lengths
a/8 to a/4 per particle) and 64 probes (24 in the cluster, 16 in the box, 12 on particles, 12 on cell centres).
Checks against physics, with PASS / FAIL:
  probes         the tree at the probes against a float64 direct sum (validation/softenedDirect.ts), held to
                 2x the tree's own max error on the same system (its cells and particles vs method 'direct')
  direct         method 'direct' at the probes against that sum: rounding (1e-12)
  linearity      gas alone + particles alone = both, at cells, particles and probes: rounding (1e-12)
  centres        probes on cell centres = the cell's potential without its self term: direct to rounding,
                 the tree within 2x its error
Particles run on the CPU backend so far ('auto' means 'cpu' here).

  --levels L       finest level of the gas sphere's mesh (level 1 = one 8^3 block)  [4]
  --particles N    particles in the cluster                                      [2000]
`,
  periodic: `amrgrav validate periodic [options]

Periodic boxes (Ewald-corrected walk, CPU and CUDA backends). FLASH's tree-solver tests and two more:
  sine           rho0 (1 + A sin(k.x)) along x, fully periodic unit box (FLASH passes at 2e-3)
  sine-diagonal  the same along the body diagonal k = 2 pi (1, 1, 1)
  layer          rho0 sech^2(z/H), periodic in x and y (FLASH passes at 2e-3)
  cylinder       Ostriker's isothermal cylinder, periodic along z (FLASH passes at 5e-3)
  multimode      a smooth random-phase multi-mode density against its FFT solution
  points         random point masses against an independent Ewald sum, theta 0.75 .. 0.1
  flash          FLASH's three: sine, layer and cylinder ('below FLASH': its tolerance / our error)
Errors: maxError = max |phi - ref| / max |ref|, l2Error, and maxDiffError (means removed, over the range of
ref: potential differences). FLASH's tolerances are compared with maxError, absolute: fully periodic
potentials have zero mean, the layer and the cylinder follow the sheet and line conventions (docs/ewald.md).
Fully periodic boxes solve for the density contrast (the mean density removed). The defaults (theta 0.5, cell
centres as FLASH's set-ups sample) put FLASH's three tests at least 10x below FLASH's tolerances; with exact
cell averages the error is the averaging's (cells acting as points on their neighbours: RESULTS.md).

  --problem P      one of the above, or all                                        [all]
  --n N            cells per wavelength (sine), across the height (layer), across (cylinder), per side
                   (multimode); points: 10 N masses                                [32]
  --sampling S     cell masses: centre (density at the centre x volume: FLASH's tests initialise so) or
                   average (exact cell averages, a finite-volume code's)           [centre]
`,
  validate: `amrgrav validate maclaurin [options]

Homogeneous oblate MacLaurin spheroid (semi-axes a1 = a2, a3 = a1 sqrt(1 - e^2)) centred in the unit box,
density rho inside and a floor of 1e-10 rho outside, blocks cut by the surface refined to the max level.
Reports the max and mean of |phi - phi_analytic| / |phi_analytic| over all leaf cells.

  --levels L       max refinement level (level 1 = one block of 8^3 cells)         [5]
  --e E            eccentricity, in [0, 1)                                         [0.9]
  --a1 A           equatorial semi-axis, cm                                        [0.25]
  --rho R          density inside, g/cm^3                                          [1]
  --subsample K    K^3 sub-samples per cell for surface volume fractions           [4]
  --direct         direct summation instead of the tree
  --sweep          theta in {1, 0.75, 0.5, 0.25, 0.1} and direct summation (JSON: an array)
  --plot FILE.png  with --sweep: max and mean relative error vs theta (log axes), direct-summation floor
`,
  solve: `amrgrav solve IN.h5 -o OUT.h5 [options]

Reads a 3-D FLASH checkpoint or plot file (HDF5), solves for the potential of its density and writes OUT.h5: a
copy of IN.h5 with 'gpot' (erg/g) added or replaced (and 'gacx', 'gacy', 'gacz' in cm s^-2 with --accel), in
the input's precision. IN.h5 is never modified; OUT.h5 appears only when complete. Prints cells, levels, time
per phase, backend and the energy W = 1/2 sum m phi (erg).

  -o, --output F   output file (required; never IN.h5, a directory, device or FIFO)
  --var NAME       density variable, g/cm^3                                        [dens]

Particles: when IN.h5 holds massive particles ('tracer particles' with a 'mass' property), they are sources
too (softened), the cells' gpot includes them, and their potential (and accelerations with --accel) replace
the particle properties 'gpot' ('accx', 'accy', 'accz') where the file has them; other properties are copied.
  --particle-softening L  Plummer-equivalent softening length, cm: potential -G m/L at a particle's centre
                   [from the runtime parameter sink_softening_radius r as r/2.8; required without it]
                   (the kernel: --softening, below)
`,
  make: `amrgrav make maclaurin|sphere|uniform -o FILE.h5 [options]

Writes a test problem as a FLASH checkpoint (float64, 8^3-cell blocks, unit box, variable 'dens') that yt and
'amrgrav solve' read. maclaurin: homogeneous spheroid, surface blocks refined to the max level; sphere: the
same with e = 0; uniform: constant density on a uniform mesh. The problem's parameters are stored as runtime
parameters so 'amrgrav plot --var relerr' can compare with the analytic potential.

  -o, --output F   output file (required)
  --levels L       max refinement level (level 1 = one block)                      [5; uniform: 3]
  --e E            maclaurin eccentricity, in [0, 1)                                [0.9]
  --a1 A           maclaurin equatorial semi-axis or sphere radius, cm              [0.25]
  --rho R          density inside, g/cm^3                                           [1]
  --subsample K    K^3 sub-samples per cell for surface volume fractions           [4]
  --G VALUE        G recorded for the analytic potential, cgs                      [6.674e-8]
  --json           print JSON only
`,
  plot: `amrgrav plot FILE.h5 --var gpot|dens|relerr|NAME [--slice z=0.5] -o OUT.png

A slice through a 3-D FLASH file at the finest resolution: colour map (viridis), colour bar, axes in cm and
the outlines of the leaf blocks cut by the slice. relerr = |gpot - phi_analytic| / |phi_analytic| (log scale)
for files written by 'amrgrav make maclaurin|sphere' and solved by 'amrgrav solve'.

  --var NAME       variable to show, or relerr                                     [gpot]
  --slice A=V      slice plane: axis x, y or z at coordinate V, cm                  [z=domain centre]
  --log            logarithmic colour scale (default for dens and relerr)
  --no-blocks      do not draw block outlines
  -o, --output F   PNG file (required)
  --json           print JSON only
`,
  bench: `amrgrav bench [options]

  --problem P      uniform | maclaurin | plummer                                   [uniform]
                   plummer: issue #18's clustered set, a Plummer sphere of points (G = M = a = 1,
                   truncated at r = 20, cells of size 1e-6), solved with --G 1, --self none and
                   --accel whatever those say
  --grid N         uniform grid of N^3 cells                                       [100]
  --cells N        uniform grid of about N cells (overrides --grid)
  --levels L       MacLaurin levels for --problem maclaurin                        [6]
  --points N       points of --problem plummer                                     [1000000]
  --check-points K --problem plummer: median, 99th percentile and largest relative
                   acceleration error against float64 direct sums at K random
                   points (JavaScript, one thread: 4096 at 1M take about a minute) [0]
  --repeat R       timed repetitions (best and mean reported)                      [3]
  --blocks B       uniform grid through the block entry in blocks of B^3 cells: timed
                   on an unchanged mesh (tree kept) and with a new mesh every call
  --float32        with --blocks: float32 density and potential
`,
};

function solverOptions(v: Record<string, string | boolean | undefined>): SolverOptions {
  const s = (k: string) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);
  return {
    method: choiceArg('method', s('method'), 'tree', ['tree', 'fmm'] as const),
    fmmOrder: intArg('fmm-order', s('fmm-order'), 7, 3, 7),
    fmmTheta: numberArg('fmm-theta', s('fmm-theta'), 0.65, (x) => x > 0 && x < 1),
    fmmTolerance: numberArg('fmm-tol', s('fmm-tol'), 2e-4, (x) => x >= 0 && x < 1),
    fmmAccelTolerance: numberArg('fmm-acc-tol', s('fmm-acc-tol'), 5e-5, (x) => x >= 0 && x < 1),
    theta: numberArg('theta', s('theta'), 0.5),
    order: choiceArg('order', s('order'), '2', ['1', '2'] as const) === '1' ? 1 : 2,
    mac: choiceArg('mac', s('mac'), 'barnes', ['barnes', 'bonsai'] as const),
    walk: choiceArg('walk', s('walk'), 'box', ['box', 'vote'] as const),
    backend: choiceArg('backend', s('backend'), 'auto', ['auto', 'cpu', 'cuda'] as const),
    threads: intArg('threads', s('threads'), 0, 0, 4096),
    G: numberArg('G', s('G'), 6.674e-8, (x) => x > 0),
    accelerations: v.accel === true,
    groupSize: (s('group-size') ?? 'auto') === 'auto' ? 'auto' : intArg('group-size', s('group-size'), 32, 1, 256),
    leafSize: intArg('leaf-size', s('leaf-size'), 16, 1, 4096),
    boundary: boundaryArg(s('boundary')),
    selfPotential: choiceArg('self', s('self'), 'lattice', ['lattice', 'cube', 'none'] as const),
    softening: choiceArg('softening', s('softening'), 'spline', ['spline', 'plummer'] as const),
    densityContrast: v['no-contrast'] !== true,
  };
}

const solverArgs = {
  method: { type: 'string' },
  'fmm-order': { type: 'string' },
  'fmm-theta': { type: 'string' },
  'fmm-tol': { type: 'string' },
  'fmm-acc-tol': { type: 'string' },
  theta: { type: 'string' },
  order: { type: 'string' },
  mac: { type: 'string' },
  walk: { type: 'string' },
  backend: { type: 'string' },
  threads: { type: 'string' },
  G: { type: 'string' },
  accel: { type: 'boolean' },
  'group-size': { type: 'string' },
  'leaf-size': { type: 'string' },
  boundary: { type: 'string' },
  self: { type: 'string' },
  softening: { type: 'string' },
  'no-contrast': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function fmt(x: number, digits = 3): string {
  return Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-2 && x !== 0) ? x.toExponential(digits - 1) : x.toPrecision(digits);
}

function table(rows: Record<string, string | number>[]): string {
  const keys = Object.keys(rows[0] ?? {});
  const cells = rows.map((r) => keys.map((k) => (typeof r[k] === 'number' ? fmt(r[k] as number) : String(r[k]))));
  const widths = keys.map((k, i) => Math.max(k.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => c.map((s, i) => s.padStart(widths[i])).join('  ');
  return [line(keys), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n');
}

/** Exit status of a validation: 1 when --check is given and a verdict is FAIL. */
async function validate(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...solverArgs,
      levels: { type: 'string' },
      e: { type: 'string' },
      a1: { type: 'string' },
      rho: { type: 'string' },
      subsample: { type: 'string' },
      direct: { type: 'boolean' },
      sweep: { type: 'boolean' },
      plot: { type: 'string' },
      problem: { type: 'string' },
      n: { type: 'string' },
      sampling: { type: 'string' },
      particles: { type: 'string' },
      check: { type: 'boolean' },
    },
  });
  const problem = positionals[0] ?? 'maclaurin';
  if (problem === 'periodic') return validatePeriodic(values);
  if (problem === 'particles') return validateParticles(values);
  if (values.help) {
    console.log(`${HELP.validate}\n${HELP.periodic}\n${HELP.solver}`);
    return 0;
  }
  if (problem !== 'maclaurin')
    throw new UsageError(`unknown validation problem '${problem}' (known: maclaurin, periodic, particles)`);
  const { runMaclaurin, sweepMaclaurin } = await import('../validation/maclaurinRun.js');
  const { maclaurinVerdict } = await import('../validation/verdict.js');
  const setup = {
    levels: intArg('levels', values.levels, 5, 1, 12),
    e: numberArg('e', values.e, 0.9, (x) => x >= 0 && x < 1),
    a1: numberArg('a1', values.a1, 0.25, (x) => x > 0 && x < 0.5),
    rho: numberArg('rho', values.rho, 1, (x) => x > 0),
    subsample: intArg('subsample', values.subsample, 4, 1, 16),
  };
  const solver = solverOptions(values);
  if (solver.boundary !== 'isolated')
    throw new UsageError('--boundary: the MacLaurin validation compares with the isolated analytic potential; use validate periodic');
  if ((values.sweep || values.direct) && mpiWorld().size > 1)
    throw new UsageError('--direct and --sweep use direct summation, which is not distributed: run them on one rank');
  if (values.sweep) {
    if (values.plot) (await import('../mesh/outputFile.js')).checkOutputPath(values.plot); // before minutes of work
    const { createProgress, progressWanted } = await import('./progress.js');
    const reports = await sweepMaclaurin({ ...setup, solver, progress: createProgress(progressWanted(!!values.json)) });
    if (values.plot) {
      const { plotSweep } = await import('../validation/plot/sweepPlot.js');
      await plotSweep(reports, values.plot);
    }
    const verdicts = reports.map((r) => maclaurinVerdict(r, setup));
    const failed = values.check && verdicts.some((v) => !v.pass) ? 1 : 0;
    if (values.json) {
      console.log(JSON.stringify(reports.map((r, i) => ({ ...r, verdict: verdicts[i] }))));
      return failed;
    }
    console.log(`MacLaurin spheroid e=${setup.e}, a1=${setup.a1}, levels=${setup.levels}, ${reports[0].cells} cells`);
    console.log(
      table(
        reports.map((r, i) => ({
          theta: r.method === 'direct' ? 'direct' : String(r.theta),
          order: String(r.order),
          maxRelError: r.maxRelError,
          meanRelError: r.meanRelError,
          'tree-vs-direct max': r.treeVsDirectMaxRelError ?? '-',
          interactionsPerCell: Math.round(r.interactionsPerCell),
          seconds: r.seconds,
          tolerance: verdicts[i].tolerance,
          verdict: verdicts[i].pass ? 'PASS' : 'FAIL',
        })),
      ),
    );
    console.log(`(tolerance: max relative error against the analytic potential; ${[...new Set(verdicts.map((v) => v.basis))].join('; ')})`);
    return failed;
  }
  const r = await runMaclaurin({ ...setup, solver, direct: !!values.direct });
  const v = maclaurinVerdict(r, setup);
  if (values.json) {
    console.log(JSON.stringify({ ...r, verdict: v }));
    return values.check && !v.pass ? 1 : 0;
  }
  console.log(
    `MacLaurin spheroid e=${r.e}, a1=${r.a1}: ${r.cells} leaf cells in ${r.blocks} blocks, levels ${r.levels}, ` +
      `${r.method === 'direct' ? 'direct summation' : r.method === 'fmm' ? `fmm order=${r.fmmOrder}` : `tree theta=${r.theta} order=${r.order}`} on ${r.backend}` +
      (r.ranks > 1 ? `, ${r.ranks} MPI ranks` : ''),
  );
  console.log(`  max relative error   ${fmt(r.maxRelError)}`);
  console.log(`  mean relative error  ${fmt(r.meanRelError)}`);
  console.log(`  interactions/cell    ${Math.round(r.interactionsPerCell)}`);
  console.log(`  solve time           ${fmt(r.seconds)} s`);
  console.log(`  ${v.pass ? 'PASS' : 'FAIL'}: max relative error ${fmt(v.error)} ${v.pass ? '<=' : '>'} tolerance ${fmt(v.tolerance)} (${v.basis})`);
  return values.check && !v.pass ? 1 : 0;
}

async function validateParticles(values: Record<string, string | boolean | undefined>): Promise<number> {
  if (values.help) {
    console.log(`${HELP.particles}\n${HELP.solver}`);
    return 0;
  }
  if (mpiWorld().size > 1) throw new UsageError('validate particles runs on one rank (particles are not distributed yet)');
  const { runParticles } = await import('../validation/particlesRun.js');
  const { particlesVerdict } = await import('../validation/verdict.js');
  const solver = solverOptions(values);
  if (solver.boundary !== 'isolated') throw new UsageError('--boundary: particles are solved in isolated boxes only so far');
  const r = await runParticles({
    levels: intArg('levels', values.levels as string | undefined, 4, 2, 7),
    particles: intArg('particles', values.particles as string | undefined, 2000, 1, 1000000),
    solver,
  });
  const v = particlesVerdict(r);
  const failed = values.check && !v.pass ? 1 : 0;
  if (values.json) {
    console.log(JSON.stringify({ ...r, verdict: v }));
    return failed;
  }
  console.log(`gas sphere (${r.cells} cells in ${r.blocks} blocks, levels ${r.levels}) + Plummer cluster (${r.particles} ` +
    `particles, ${r.softening} softening) + ${r.probes} probes, tree theta=${r.theta} on ${r.backend}`);
  console.log(table([
    { check: 'probes: tree vs float64 direct sum', max: r.probeTreeError.max, mean: r.probeTreeError.mean },
    { check: 'cells: tree vs direct', max: r.cellTreeError.max, mean: r.cellTreeError.mean },
    { check: 'particles: tree vs direct', max: r.particleTreeError.max, mean: r.particleTreeError.mean },
    { check: "probes: method 'direct' vs the sum", max: r.probeDirectError, mean: '-' },
    { check: 'linearity gap', max: r.linearityGap, mean: '-' },
    { check: 'probes on cell centres (direct)', max: r.centreGapDirect, mean: '-' },
    { check: 'probes on cell centres (tree)', max: r.centreGapTree, mean: '-' },
  ]));
  console.log(`  probe error / system tree error  ${fmt(r.probeErrorRatio)} (<= 2)`);
  console.log(`  solve time                       ${fmt(r.seconds)} s`);
  console.log(`  ${v.pass ? 'PASS' : `FAIL (${v.failed.join(', ')})`}: probes' max error ${fmt(v.error)} ` +
    `${v.error <= v.tolerance ? '<=' : '>'} ${fmt(v.tolerance)} (${v.basis})`);
  return failed;
}

async function validatePeriodic(values: Record<string, string | boolean | undefined>): Promise<number> {
  if (values.help) {
    console.log(`${HELP.periodic}\n${HELP.solver}`);
    return 0;
  }
  const { flashProblems, periodicProblems, runPeriodicProblem } = await import('../validation/periodicRun.js');
  const { periodicVerdict, periodicMarginBelowFlash } = await import('../validation/verdict.js');
  const which = choiceArg('problem', values.problem as string | undefined, 'all', ['all', 'flash', ...periodicProblems] as const);
  const n = intArg('n', values.n as string | undefined, 32, 4, 512);
  const sampling = choiceArg('sampling', values.sampling as string | undefined, 'centre', ['centre', 'average'] as const);
  const solver = solverOptions(values);
  const names = which === 'all' ? periodicProblems : which === 'flash' ? flashProblems : [which];
  const reports: Awaited<ReturnType<typeof runPeriodicProblem>>[] = [];
  for (const name of names) reports.push(await runPeriodicProblem(name, n, solver, sampling));
  const failed = values.check && reports.some((r) => !Array.isArray(r) && periodicVerdict(r)?.pass === false) ? 1 : 0;
  if (values.json) {
    console.log(JSON.stringify(reports.flat().map((r) => ('maxError' in r ? { ...r, verdict: periodicVerdict(r) } : r))));
    return failed;
  }
  const grids = reports.flat().filter((r) => 'maxError' in r);
  if (grids.length) {
    console.log(`periodic validation, theta ${solver.theta}, order ${solver.order}, self term ${solver.selfPotential}, ` +
      `backend ${grids[0].backend}`);
    console.log(
      table(
        grids.map((r) => ({
          problem: r.problem,
          cells: r.cells,
          maxError: r.maxError,
          maxDiffError: r.maxDiffError,
          l2Error: r.l2Error,
          'FLASH tol': r.flashTolerance ?? '-',
          'below FLASH': r.marginBelowFlash ? `${r.marginBelowFlash.toFixed(1)}x` : '-',
          seconds: r.seconds,
          verdict: ((v) => (v ? (v.pass ? 'PASS' : 'FAIL') : '-'))(periodicVerdict(r)),
        })),
      ),
    );
    console.log('(FLASH tolerance against maxError: absolute, no fitted constant; zero mean when fully periodic,');
    console.log(' the sheet and line conventions for the layer and the cylinder)');
    console.log(`(verdict: PASS when maxError is at least ${periodicMarginBelowFlash}x below FLASH's tolerance, the diagonal wave below it; '-': no tolerance, reported only)`);
  }
  for (const r of reports.flat()) {
    if ('errors' in r) {
      console.log(`${r.problem} (${r.points}, ${r.boundary}) vs independent Ewald sum: ` +
        r.errors.map((e) => `theta ${e.theta}: ${fmt(e.maxError)}`).join(', '));
    }
  }
  return failed;
}

async function bench(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...solverArgs,
      problem: { type: 'string' },
      grid: { type: 'string' },
      cells: { type: 'string' },
      levels: { type: 'string' },
      points: { type: 'string' },
      'check-points': { type: 'string' },
      repeat: { type: 'string' },
      blocks: { type: 'string' },
      float32: { type: 'boolean' },
    },
  });
  if (values.help) return void console.log(`${HELP.bench}\n${HELP.solver}`);
  const { runBench } = await import('../bench/runBench.js');
  const { createProgress, progressWanted } = await import('./progress.js');
  const r = await runBench({
    progress: createProgress(progressWanted(!!values.json) && mpiWorld().rank === 0),
    problem: choiceArg('problem', values.problem, 'uniform', ['uniform', 'maclaurin', 'plummer'] as const),
    points: intArg('points', values.points, 1_000_000, 1, 2 ** 31 - 1),
    checkPoints: intArg('check-points', values['check-points'], 0, 0, 1_000_000),
    grid: intArg('grid', values.grid, 100, 1, 2048),
    cells: values.cells === undefined ? undefined : intArg('cells', values.cells, 0, 1, 2 ** 32 - 1),
    levels: intArg('levels', values.levels, 6, 1, 12),
    repeat: intArg('repeat', values.repeat, 3, 1, 1000),
    ...(values.blocks !== undefined ? { blocks: intArg('blocks', values.blocks, 8, 1, 256) } : {}),
    blockDtype: values.float32 ? 'float32' : 'float64',
    solver: solverOptions(values),
  });
  if (values.json) return void console.log(JSON.stringify(r));
  console.log(
    `${r.problem}: ${r.cells} cells, ${r.backend} (${r.threads} threads${r.ranks > 1 ? ` x ${r.ranks} MPI ranks` : ''}), ` +
      (r.method === 'fmm' ? `method fmm, order ${r.fmmOrder}, theta ${r.fmmTheta}, tolerance ${r.fmmTolerance}` : `theta ${r.theta}, order ${r.order}`),
  );
  console.log(`  seconds (best of ${r.repeat})   ${fmt(r.seconds)}   (mean ${fmt(r.secondsMean)})`);
  console.log(`  cells/s                 ${fmt(r.cellsPerSecond)}`);
  console.log(`  interactions/cell       ${Math.round(r.interactionsPerCell)} (${Math.round(r.approxInteractionsPerCell)} ${r.method === 'fmm' ? 'M2L node-node' : 'node'}, ${Math.round(r.directInteractionsPerCell)} cell)`);
  console.log(`  walk interactions/s     ${fmt(r.interactionsPerSecond)}`);
  const p = r.phases;
  console.log(
    `  phases (s): upload ${fmt(p.upload)}, keys+sort ${fmt(p.keysAndSort)}, build ${fmt(p.build)}, ` +
      `moments ${fmt(p.moments)}, walk ${fmt(p.walk)}, download ${fmt(p.download)}`,
  );
  if (r.deviceBytesPerCell > 0) console.log(`  device memory           ${fmt(r.deviceBytesPerCell)} bytes/cell`);
  console.log(`  walk groups             ${r.groups} (${fmt(r.cells / r.groups)} cells each on average)`);
  if (r.accuracy)
    console.log(
      `  acceleration error      median ${fmt(r.accuracy.median)}, 99th percentile ${fmt(r.accuracy.p99)}, ` +
        `largest ${fmt(r.accuracy.max)} (${r.accuracy.checkPoints} points vs float64 direct sums)`,
    );
  if (r.blocks)
    console.log(
      `  block entry (${r.blocks.blockSize}^3 blocks, ${r.blocks.dtype}): unchanged mesh ${fmt(r.seconds)} s (tree kept: ` +
        `${r.blocks.treeReused}), new mesh ${fmt(r.blocks.secondsNewMesh)} s`,
    );
  if (r.perRank) {
    console.log('  per rank (best repetition; seconds, LET bytes):');
    console.log(
      table(
        r.perRank.map((p, rank) => ({
          rank: String(rank),
          ...p,
          // the part of the exchange that ran during the local walk, and the part nobody waited for
          overlapFraction: p.exchange > 0 ? p.overlap / p.exchange : 0,
          hiddenFraction: p.exchange > 0 ? 1 - p.exchangeWait / p.exchange : 1,
        })),
      )
        .split('\n')
        .map((l) => `    ${l}`)
        .join('\n'),
    );
  }
}

function requireOutput(v: string | undefined, command: string): string {
  if (!v) throw new UsageError(`${command}: the output file is required (-o FILE)`);
  return v;
}

/** --boundary: 'isolated', 'periodic', or the periodic axes as letters ('xy', 'z', ...). */
function boundaryArg(v: string | undefined): BoundaryChoice {
  if (v === undefined || v === 'isolated' || v === 'periodic') return v ?? 'isolated';
  if (!/^[xyz]{1,3}$/.test(v) || new Set(v).size !== v.length)
    throw new UsageError(`--boundary: expected isolated, periodic or periodic axes such as xy or z, got '${v}'`);
  const axis = (a: string) => (v.includes(a) ? 'periodic' : 'isolated');
  return { x: axis('x'), y: axis('y'), z: axis('z') };
}

async function solve(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      ...solverArgs,
      output: { type: 'string', short: 'o' },
      var: { type: 'string' },
      'particle-softening': { type: 'string' },
    },
  });
  if (values.help) return void console.log(`${HELP.solve}\n${HELP.solver}`);
  if (positionals.length !== 1) throw new UsageError(`solve: expected one input file, got ${positionals.length}`);
  const output = requireOutput(values.output, 'solve');
  const { solveFlashFile } = await import('../solver/solveFile.js');
  const { createProgress, progressWanted } = await import('./progress.js');
  const softening = values['particle-softening'];
  const r = await solveFlashFile(positionals[0], output, {
    densityVar: values.var ?? 'dens',
    solver: solverOptions(values),
    ...(softening !== undefined ? { particleSoftening: numberArg('particle-softening', softening, 0, (x) => x > 0) } : {}),
    progress: createProgress(progressWanted(!!values.json)),
  });
  if (values.json) return void console.log(JSON.stringify(r));
  const s = r.solve;
  console.log(`${r.input} -> ${r.output}: wrote ${r.written.join(', ')}`);
  console.log(`  cells            ${r.cells} in ${r.leafBlocks} leaf blocks (${r.blocks} blocks), levels ${r.levels[0]}..${r.levels[1]}`);
  console.log(`  backend          ${s.backend} (${s.threads} threads; ${s.backendReason}), theta ${values.theta ?? 0.5}, order ${values.order ?? 2}`);
  const p = r.particles;
  if (p) {
    console.log(
      `  particles        ${p.sources} of ${p.count} massive (${fmt(p.mass, 4)} g) were sources, softening ${fmt(p.softening, 4)} cm ` +
        `(${p.softeningFrom === 'option' ? '--particle-softening' : `from ${p.softeningFrom}`}, ${p.kernel}); ` +
        `wrote ${p.written.length > 0 ? p.written.join(', ') : 'no particle property (the file has no gpot, accx, accy, accz)'}`,
    );
  }
  console.log(`  energy W         ${fmt(r.energy, 6)} erg (1/2 sum m phi${p ? ', cells and particles' : ''})`);
  console.log(`  interactions     ${Math.round(s.interactionsPerCell)} per cell`);
  console.log(
    `  time (s)         read ${fmt(r.seconds.read)}, mesh ${fmt(r.seconds.mesh)}, solve ${fmt(r.seconds.solve)} ` +
      `(keys+sort ${fmt(s.seconds.keysAndSort)}, build ${fmt(s.seconds.build)}, moments ${fmt(s.seconds.moments)}, walk ${fmt(s.seconds.walk)}), ` +
      `write ${fmt(r.seconds.write)}, total ${fmt(r.seconds.total)}`,
  );
}

async function make(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      output: { type: 'string', short: 'o' },
      levels: { type: 'string' },
      e: { type: 'string' },
      a1: { type: 'string' },
      rho: { type: 'string' },
      subsample: { type: 'string' },
      G: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(HELP.make);
  const kinds = ['maclaurin', 'sphere', 'uniform'] as const;
  const kind = kinds.find((k) => k === positionals[0]);
  if (!kind || positionals.length !== 1) throw new UsageError(`make: name one problem: ${kinds.join(', ')} (got ${positionals.join(' ') || 'none'})`);
  const output = requireOutput(values.output, 'make');
  const { writeProblemFile, estimateProblemCells } = await import('../validation/problemFiles.js');
  const { checkOutputPath } = await import('../mesh/outputFile.js');
  const { formatBytes } = await import('../solver/memory.js');
  const { createProgress, progressWanted } = await import('./progress.js');
  const setup = {
    levels: intArg('levels', values.levels, kind === 'uniform' ? 3 : 5, 1, 12),
    e: numberArg('e', values.e, 0.9, (x) => x >= 0 && x < 1),
    a1: numberArg('a1', values.a1, 0.25, (x) => x > 0 && x < 0.5),
    rho: numberArg('rho', values.rho, 1, (x) => x > 0),
    subsample: intArg('subsample', values.subsample, 4, 1, 16),
    G: numberArg('G', values.G, 6.674e-8, (x) => x > 0),
  };
  checkOutputPath(output); // before the work: never over a directory, device, FIFO or socket
  const progress = createProgress(progressWanted(!!values.json));
  const t0 = performance.now();
  const est = estimateProblemCells(kind, setup); // refuses (OutOfMemoryError) what cannot fit
  progress.phase(`building the ${kind} mesh (estimate: ${fmt(est.cells)} cells, ${formatBytes(est.bytes)} of memory, ~${fmt(est.seconds)} s)`);
  const d = await writeProblemFile(output, kind, setup, { onProgress: (i, n, name) => progress.update(`writing ${name}`, i, n) });
  progress.end();
  let leaves = 0;
  for (const t of d.nodeType) leaves += t === 1 ? 1 : 0;
  const r = { output, problem: kind, blocks: d.blockCount, leafBlocks: leaves, cells: leaves * d.nxb * d.nyb * d.nzb, seconds: (performance.now() - t0) / 1e3 };
  if (values.json) return void console.log(JSON.stringify(r));
  console.log(`${kind}: wrote ${output}: ${r.cells} leaf cells in ${r.leafBlocks} leaf blocks (${r.blocks} blocks), ${fmt(r.seconds)} s`);
}

async function plot(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      output: { type: 'string', short: 'o' },
      var: { type: 'string' },
      slice: { type: 'string' },
      log: { type: 'boolean' },
      'no-blocks': { type: 'boolean' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return void console.log(HELP.plot);
  if (positionals.length !== 1) throw new UsageError(`plot: expected one input file, got ${positionals.length}`);
  const output = requireOutput(values.output, 'plot');
  let slice: { axis: 'x' | 'y' | 'z'; at?: number } = { axis: 'z' };
  if (values.slice !== undefined) {
    const m = /^([xyz])=(.+)$/.exec(values.slice);
    if (!m) throw new UsageError(`--slice: expected AXIS=VALUE with AXIS x, y or z (e.g. z=0.5), got '${values.slice}'`);
    slice = { axis: m[1] as 'x' | 'y' | 'z', at: numberArg('slice', m[2], 0) };
  }
  const { plotSliceFile } = await import('../validation/plot/slicePlot.js');
  const variable = values.var ?? 'gpot';
  const r = await plotSliceFile(positionals[0], output, {
    variable,
    slice,
    log: values.log ?? (variable === 'dens' || variable === 'relerr'),
    blocks: !values['no-blocks'],
  });
  if (values.json) return void console.log(JSON.stringify(r));
  console.log(`${r.input}: ${r.variable} on ${r.axis}=${fmt(r.at)} -> ${r.output} (${r.width}x${r.height}, range ${fmt(r.min)} .. ${fmt(r.max)})`);
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  let rank = 0;
  let ranks = 1;
  try {
    if (process.env.OMPI_COMM_WORLD_SIZE || process.env.PMIX_RANK || process.env.PMI_RANK || process.env.AMRGRAV_MPI === '1') {
      ({ rank, size: ranks } = mpiWorld()); // initialises MPI
      if (rank !== 0) console.log = () => {}; // only rank 0 prints tables and JSON
    }
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      console.log(HELP.main);
      return command === undefined ? 1 : 0;
    }
    // FLASH files are read and written whole by one process: the file commands are not distributed (yet)
    if (ranks > 1 && (command === 'make' || command === 'plot'))
      throw new UsageError(`'${command}' runs on one rank; under mpirun use solve, validate or bench`);
    (await import('../mesh/outputFile.js')).removeTempFilesOnSignals(); // an interrupted write leaves no .tmp file
    if (command === 'validate') return await validate(rest);
    else if (command === 'bench') await bench(rest);
    else if (command === 'solve') await solve(rest);
    else if (command === 'make') await make(rest);
    else if (command === 'plot') await plot(rest);
    else throw new UsageError(`unknown command '${command}' (try amrgrav --help)`);
    return 0;
  } catch (err) {
    // every rank meets the same usage errors, and a solve's errors are agreed by all ranks: rank 0 reports them
    if (err instanceof UsageError || String((err as { code?: string }).code).startsWith('ERR_PARSE_ARGS')) {
      if (rank === 0) console.error(`amrgrav: ${(err as Error).message}`);
      return 2;
    }
    if (err instanceof AmrgravError) {
      if (rank === 0) console.error(`amrgrav: ${err.name} [${err.code}]: ${err.message}`);
      return 1;
    }
    if (ranks > 1) abortAllRanks(`unexpected error: ${(err as Error).stack ?? String(err)}`); // the others would wait
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
