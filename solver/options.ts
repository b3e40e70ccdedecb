/**
 * Solver options: one place for defaults, ranges and units, validated before any native call.
 */
import { invalidOption } from './errors.js';

/** Where the tree is built and walked. 'auto' picks CUDA when this build and machine have it, else the CPU. */
export type BackendChoice = 'auto' | 'cpu' | 'cuda';

/**
 * How the far field is computed: 'tree' (the Barnes-Hut group walk, options theta, order, mac, walk; every backend,
 * box and MPI run) or 'fmm' (the fast multipole method, options fmmOrder, fmmTheta, fmmTolerance; both backends:
 * isolated, fully and partly periodic boxes in one process, isolated and fully periodic boxes over MPI ranks).
 */
export type MethodChoice = 'tree' | 'fmm';

/** Multipole acceptance criterion, see native/core/types.h. */
export type MacChoice = 'barnes' | 'bonsai';

/** How a group of cells decides a node is acceptable: 'box' (its bounding box) or 'vote' (every cell votes). */
export type WalkChoice = 'box' | 'vote';

/**
 * The softening kernel of particles (system solves, {@link SystemInput.particles}): 'spline' (the compact cubic spline
 * of SPH and Gadget, exactly Newtonian beyond 2.8 eps) or 'plummer' (-G m / sqrt(r^2 + eps^2)).
 */
export type SofteningChoice = 'spline' | 'plummer';

/** One axis's boundary. */
export type AxisBoundary = 'periodic' | 'isolated';

/**
 * Boundary conditions: 'isolated' (phi -> 0 at infinity), 'periodic' (all three axes), or per axis, e.g.
 * `{ x: 'periodic', y: 'periodic', z: 'isolated' }` for a layer. Periodic solves need the box (its sides are the
 * periods). Conventions of the potential's constant (see docs/ewald.md):
 * - 3 periodic axes: the mean density is removed and the potential has zero mean over the box;
 * - 2 periodic axes (x, y): nothing is removed; the potential averaged over a plane z = const is
 *   2 pi G integral Sigma(z') |z - z'| dz' exactly (Sigma the mass per unit area), no further constant;
 * - 1 periodic axis of period L: the potential averaged along the axis is -2 G sum_j (m_j / L) ln(rho_j / L),
 *   rho_j the distance from the line through cell j.
 */
export type BoundaryChoice = 'isolated' | 'periodic' | { x: AxisBoundary; y: AxisBoundary; z: AxisBoundary };

/**
 * Each cell's own contribution to its potential, -c G m / h (m, h the cell's mass and side; per cell, so AMR cells
 * of any size get their own). The sums over the other cells treat them as point masses at their centres.
 * - 'lattice' (the default): c = 2.8372975, minus the regular part at a lattice point of the cubic lattice's
 *   zero-mean Green's function. It is the term that makes a grid of point masses sum to the continuum potential
 *   of a smooth density: a uniform periodic grid gets exactly the uniform density's potential, a smooth field
 *   sampled at cell centres converges at fourth order, and with cell averages (a finite-volume code's) the error
 *   left is the averaging's own, (h^2/24) lap(phi), half the cube term's. A sharp density jump on cell faces adds
 *   a double layer, a constant -(pi/6) G drho h^2 inside the body (no force).
 * - 'cube': c = 2.3800774, the potential at the centre of the cell alone as a uniform cube: 0.457 G rho h^2 above
 *   the smooth-field value. Numbers for both: bench/RESULTS.md, "Self term".
 * - false (or 'none'): point masses, no self term. true means 'cube' (the term before the choice existed).
 */
export type SelfPotentialChoice = 'cube' | 'lattice' | 'none' | boolean;

/** The self-term model a choice stands for. */
export function selfPotentialModel(choice: SelfPotentialChoice): 'none' | 'cube' | 'lattice' {
  return choice === true ? 'cube' : choice === false ? 'none' : choice;
}

export interface SolverOptions {
  /**
   * Far-field method, see {@link MethodChoice}. 'fmm' (issue #20): node-node interactions (M2L) with local
   * expansions passed down the tree and direct sums between neighbouring 64-cell leaves; its accuracy is set by
   * fmmOrder, fmmTheta and fmmTolerance (defaults: max relative error <= 2e-5 of the potential on the MacLaurin and
   * random AMR meshes, momentum conserved to rounding). Built so far for backend 'cpu' in every boundary (isolated;
   * fully periodic: the density contrast, as the tree; partly periodic sheets and lines: the masses as given and the
   * tree's Green's function and constant; the near images along the periodic axes walked, the far ones through one
   * Ewald-derived kernel, docs/fmm-design.md section 7) in one process, and in isolated and fully periodic boxes on
   * MPI ranks; backend 'cuda' takes every box in one process (the tree and lists built on the host, the evaluation
   * on the GPU: docs/fmm-design.md, "GPU stage 1"; periodic boxes with the lists' image shifts and the far images'
   * pass on the host: "Periodic boxes on the GPU") and the same boxes as the CPU over MPI ranks (each rank's own lists
   * and downward pass on its GPU, the LETs on the host: section 8; CPU and GPU ranks may be mixed). A partly periodic
   * box over MPI ranks is an InvalidOptionError. Default 'tree'.
   */
  method?: MethodChoice;
  /** method 'fmm': expansion order p of the multipoles and local expansions, an integer in [3, 7]. Default 7. */
  fmmOrder?: number;
  /**
   * method 'fmm': opening angle; a node pair interacts through its expansions only when r_A + r_B < fmmTheta R (r: the
   * nodes' radii about their centres of mass, R: their distance); in (0, 1). Default 0.65.
   */
  fmmTheta?: number;
  /**
   * method 'fmm': error tolerance, dimensionless; a node pair also needs its truncation-error bound to be at most
   * fmmTolerance times a lower bound of each side's potential, and a leaf's own truncation at most 2 fmmTolerance
   * of the other node's potential there (so that it stays bounded summed over the many small sources a coarse leaf
   * beside a refined region meets; docs/fmm-design.md, section 3); in boxes with a
   * periodic axis, where the potential crosses zero (the density contrast's; a sheet's or a line's, which falls
   * as -|w| or -ln rho away from the masses), an estimate from the multipole norms against 1/32 of a scale of |phi|
   * (section 7); in [0, 1), 0 = the opening angle alone. Default 2e-4.
   */
  fmmTolerance?: number;
  /**
   * method 'fmm' with accelerations, isolated boxes: the accelerations' error tolerance, dimensionless; a node pair
   * also needs its bound of the error in the gradient to be at most fmmAccelTolerance times G |M| / side^2 (|M|: the
   * total |mass|, side: the root cube's; 2.5-26x below the largest |a| on the meshes measured, docs/fmm-design.md
   * section 3: with the default, 7e-7 to 1.2e-5 of max |a| at every cell of uniform, nested, MacLaurin and 16 random
   * AMR meshes; 1e-4 left 2.0e-5 to 2.2e-5 on three of them); in [0, 1), 0 = the potential's rules alone
   * (the potential's lists: asking for accelerations then leaves the potential's bits unchanged). Without
   * accelerations, or in a box with a periodic axis, it has no effect. The rule costs 3-6x the near field (uniform
   * 64^3, 2 CPU threads: 12059 P2P per cell against the potential's 1867, 10.5 s against 1.5 s). Default 5e-5.
   */
  fmmAccelTolerance?: number;
  /** Opening angle theta of the MAC d > l/theta + delta; (0, 1]. Smaller is more accurate and slower. Default 0.5. */
  theta?: number;
  /** Multipole order: 1 = monopole, 2 = monopole + traceless quadrupole. Default 2. */
  order?: 1 | 2;
  /** MAC variant: 'barnes' (Barnes 1994, node cube side; the FLASH4 GPU solver's) or 'bonsai' (tight cell box). Default 'barnes'. */
  mac?: MacChoice;
  /**
   * Group acceptance: 'box' tests the node against the group's bounding box (conservative, the default);
   * 'vote' is the FLASH4 GPU solver's literal warp vote (each cell tests its own centre, all must agree), which
   * accepts more nodes: fewer interactions, slightly larger errors. Both backends implement both. Default 'box'.
   */
  walk?: WalkChoice;
  /** Gravitational constant in the caller's units. Default 6.674e-8 (cgs: cm^3 g^-1 s^-2). */
  G?: number;
  /** Backend. Default 'auto'. */
  backend?: BackendChoice;
  /** Boundary conditions, see {@link BoundaryChoice}. Default 'isolated' (potential -> 0 at infinity). */
  boundary?: BoundaryChoice;
  /**
   * Ewald table points per half period of the shortest periodic side, [4, 512]. 28 (the default) interpolates
   * the image correction to ~1e-7 of 1/L; the table is built once per box shape (~1 s) and cached on disk
   * ($AMRGRAV_CACHE_DIR, else $XDG_CACHE_HOME/amrgrav or ~/.cache/amrgrav). Default 28.
   */
  ewaldResolution?: number;
  /**
   * Periodic boxes: groups whose half-diagonal is at most 3.5 table spacings (1/16 of the period at the default
   * resolution: groups of 64 cells from 64^3 up) take the Ewald correction as one cubic expansion about their
   * centre instead of a table lookup per (cell, source) pair, which costs about 4x an interaction; each source's
   * correction is taken at the first node of its path whose other images are two MAC radii away. The difference is
   * ~1e-6 of the potential's largest magnitude in partly periodic boxes; on the density contrast of a 64^3 sine 6e-5
   * of the perturbation's potential, a sixth of the walk's own error (bench/RESULTS.md "Periodic groups of 64").
   * false: per-pair lookups. Default true.
   */
  ewaldExpansion?: boolean;
  /**
   * Fully periodic boxes: the sources are the density contrast, each cell's mass minus the mean density times its
   * volume, m - (M / V_box) h^3 (M: all cells' mass, every rank's). A uniform density has no potential in a
   * periodic box (the Green's function has zero mean), so this removes only the tree's error on the background:
   * the error then scales with the perturbation, not with the whole mass, and adding a constant density changes
   * the potential by rounding alone. Signed masses (a contrast the caller made) are accepted. Nodes are expanded
   * about their cube centres with a dipole term (a centre of mass is undefined when the masses sum to ~0).
   * false: the masses as given, none negative (point sets that do not tile the box). Ignored in isolated and
   * partly periodic boxes (see README, "Periodic boxes"). Default true.
   */
  densityContrast?: boolean;
  /**
   * Backend 'auto' with a usable GPU: solves of fewer cells than this run on the CPU, where the GPU's fixed costs
   * (transfers, launches) outweigh its speed; stats.backendReason then says "auto: N cells below the GPU's
   * break-even (M)". Not applied to distributed solves. Default 1000 (0 = off): measured on an H100 with 16 host
   * cores, the GPU took as long as the CPU at 512 cells and half as long at 1728 (bench/RESULTS.md).
   */
  autoGpuMinCells?: number;
  /**
   * The softening kernel of particles in {@link GravitySolver.solveSystem} (no effect on cells, which have none).
   * A particle's softening length eps (cm, per particle) is the Plummer-equivalent length for both kernels: its
   * potential at its own centre is -G m / eps either way. 'spline': the compact cubic spline (Monaghan & Lattanzio
   * 1985, as SPH codes and Gadget use it) of radius 2.8 eps, exactly Newtonian beyond; 'plummer': -G m /
   * sqrt(r^2 + eps^2), softened at every distance. A pair is softened by max(eps_i, eps_j) (a cell has eps 0, so a
   * cell-particle pair takes the particle's). Default 'spline'.
   */
  softening?: SofteningChoice;
  /** Also compute accelerations -grad(phi) (cm s^-2) in the same walk. Default false. */
  accelerations?: boolean;
  /** Each cell's own term -c G m / h, see {@link SelfPotentialChoice}. Default 'lattice'. */
  selfPotential?: SelfPotentialChoice;
  /** Largest number of cells in a tree leaf, [1, 256]. Default 16. */
  leafSize?: number;
  /**
   * Points per walk group, [1, 256] (the CUDA backend: at most 64, two per GPU lane above 32), or 'auto' (the
   * default): the cells' groups hold 64 (with accelerations, 32 is 6% faster on the GPU in isolated boxes: set
   * it), particles' and probes' 32 (native/core/types.h cellGroupSize says why; bench/RESULTS.md "Walk groups of
   * 64" and "Periodic groups of 64"). A group is at most this many consecutive sorted cells inside one "home
   * node" (the largest octree node of at most 32 groupSize cells), so clustered point sets get compact groups;
   * uniform 2^k grids and 8^3-block meshes keep runs of exactly groupSize.
   */
  groupSize?: number | 'auto';
  /** CPU threads; 0 = all hardware threads. Default 0. */
  threads?: number;
  /**
   * Under mpirun: 'auto' (or true) makes {@link GravitySolver.solveCells} a collective in which each rank passes
   * its own cells and gets the potential of all ranks' cells (locally essential trees; with backend 'cuda', or
   * 'auto' where the rank sees a GPU, each rank's tree and walks run on its GPU: node-local rank modulo the node's
   * GPUs, isolated and periodic boxes alike); false solves each rank's cells alone. No effect in a single process.
   * Default 'auto'.
   */
  distributed?: boolean | 'auto';
}

export type ResolvedOptions = Required<SolverOptions>;

export const defaultOptions: ResolvedOptions = Object.freeze({
  method: 'tree',
  fmmOrder: 7,
  fmmTheta: 0.65,
  fmmTolerance: 2e-4,
  fmmAccelTolerance: 5e-5,
  theta: 0.5,
  order: 2,
  mac: 'barnes',
  walk: 'box',
  G: 6.674e-8,
  backend: 'auto',
  boundary: 'isolated',
  ewaldResolution: 28,
  ewaldExpansion: true,
  densityContrast: true,
  autoGpuMinCells: 1000,
  softening: 'spline',
  accelerations: false,
  selfPotential: 'lattice',
  leafSize: 16,
  groupSize: 'auto',
  threads: 0,
  distributed: 'auto',
}) as ResolvedOptions;

function isInt(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v);
}

/** Fills defaults and checks every field; throws InvalidOptionError naming the field, the range and the value. */
export function resolveOptions(options: SolverOptions = {}): ResolvedOptions {
  if (options === null || typeof options !== 'object') throw invalidOption('options', 'an object', options);
  const known = new Set(Object.keys(defaultOptions));
  for (const key of Object.keys(options)) {
    if (!known.has(key)) throw invalidOption(key, `one of the known options (${[...known].join(', ')})`, key);
  }
  const o = { ...defaultOptions, ...Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) };
  if (o.method !== 'tree' && o.method !== 'fmm') throw invalidOption('method', "'tree' or 'fmm'", o.method);
  if (!isInt(o.fmmOrder) || o.fmmOrder < 3 || o.fmmOrder > 7) throw invalidOption('fmmOrder', 'an integer in [3, 7]', o.fmmOrder);
  if (typeof o.fmmTheta !== 'number' || !(o.fmmTheta > 0 && o.fmmTheta < 1)) throw invalidOption('fmmTheta', 'a number in (0, 1)', o.fmmTheta);
  if (typeof o.fmmTolerance !== 'number' || !(o.fmmTolerance >= 0 && o.fmmTolerance < 1))
    throw invalidOption('fmmTolerance', 'a number in [0, 1)', o.fmmTolerance);
  if (typeof o.fmmAccelTolerance !== 'number' || !(o.fmmAccelTolerance >= 0 && o.fmmAccelTolerance < 1))
    throw invalidOption('fmmAccelTolerance', 'a number in [0, 1)', o.fmmAccelTolerance);
  if (typeof o.theta !== 'number' || !(o.theta > 0 && o.theta <= 1)) throw invalidOption('theta', 'a number in (0, 1]', o.theta);
  if (o.order !== 1 && o.order !== 2) throw invalidOption('order', '1 or 2', o.order);
  if (o.mac !== 'barnes' && o.mac !== 'bonsai') throw invalidOption('mac', "'barnes' or 'bonsai'", o.mac);
  if (o.walk !== 'box' && o.walk !== 'vote') throw invalidOption('walk', "'box' or 'vote'", o.walk);
  if (typeof o.G !== 'number' || !Number.isFinite(o.G) || o.G <= 0) throw invalidOption('G', 'a finite number > 0', o.G);
  if (o.backend !== 'auto' && o.backend !== 'cpu' && o.backend !== 'cuda')
    throw invalidOption('backend', "'auto', 'cpu' or 'cuda'", o.backend);
  periodicAxes(o.boundary as BoundaryChoice);
  if (!isInt(o.ewaldResolution) || o.ewaldResolution < 4 || o.ewaldResolution > 512)
    throw invalidOption('ewaldResolution', 'an integer in [4, 512]', o.ewaldResolution);
  if (typeof o.ewaldExpansion !== 'boolean') throw invalidOption('ewaldExpansion', 'a boolean', o.ewaldExpansion);
  if (typeof o.densityContrast !== 'boolean') throw invalidOption('densityContrast', 'a boolean', o.densityContrast);
  if (!isInt(o.autoGpuMinCells) || o.autoGpuMinCells < 0) throw invalidOption('autoGpuMinCells', 'an integer >= 0', o.autoGpuMinCells);
  if (o.softening !== 'spline' && o.softening !== 'plummer') throw invalidOption('softening', "'spline' or 'plummer'", o.softening);
  if (typeof o.accelerations !== 'boolean') throw invalidOption('accelerations', 'a boolean', o.accelerations);
  if (typeof o.selfPotential !== 'boolean' && !['cube', 'lattice', 'none'].includes(o.selfPotential as string))
    throw invalidOption('selfPotential', "'cube', 'lattice', 'none' or a boolean (true = 'cube')", o.selfPotential);
  if (!isInt(o.leafSize) || o.leafSize < 1 || o.leafSize > 256) throw invalidOption('leafSize', 'an integer in [1, 256]', o.leafSize);
  if (o.groupSize !== 'auto' && (!isInt(o.groupSize) || o.groupSize < 1 || o.groupSize > 256))
    throw invalidOption('groupSize', "'auto' or an integer in [1, 256]", o.groupSize);
  if (!isInt(o.threads) || o.threads < 0 || o.threads > 4096) throw invalidOption('threads', 'an integer in [0, 4096]', o.threads);
  if (o.distributed !== 'auto' && typeof o.distributed !== 'boolean')
    throw invalidOption('distributed', "'auto', true or false", o.distributed);
  // method 'fmm' takes every box on both backends in one process; over MPI ranks the native session refuses what is
  // not built (partly periodic boxes) with a typed error, never a silent fall-back to the tree
  return o as ResolvedOptions;
}

/**
 * The periodic axes [x, y, z] of a boundary choice.
 * @throws InvalidOptionError for anything but 'isolated', 'periodic' or {x, y, z} of 'periodic' | 'isolated'.
 */
export function periodicAxes(boundary: BoundaryChoice): [boolean, boolean, boolean] {
  const expected = "'isolated', 'periodic' or { x, y, z } each 'periodic' or 'isolated'";
  if (boundary === 'isolated') return [false, false, false];
  if (boundary === 'periodic') return [true, true, true];
  if (boundary === null || typeof boundary !== 'object') throw invalidOption('boundary', expected, boundary);
  const keys = Object.keys(boundary);
  const axes = (['x', 'y', 'z'] as const).map((a) => {
    const v = (boundary as Record<string, unknown>)[a];
    if (v !== 'periodic' && v !== 'isolated') throw invalidOption(`boundary.${a}`, "'periodic' or 'isolated'", v);
    return v === 'periodic';
  });
  const extra = keys.filter((k) => !['x', 'y', 'z'].includes(k));
  if (extra.length) throw invalidOption('boundary', `only the keys x, y, z (${expected})`, extra[0]);
  return axes as [boolean, boolean, boolean];
}
