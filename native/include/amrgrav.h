/* amrgrav.h: the C API of amrgrav, for C, C++ and Fortran (ISO_C_BINDING) hydro codes that link the native core
 * (libamrgrav) without Node. The same solver as the Node package: a Barnes-Hut octree over the cells, walked in
 * groups of 64 neighbouring cells, on the CPU (threads) or one GPU (CUDA).
 *
 * Use, once per run and every step:
 *   amrgrav_options o;  amrgrav_default_options(&o);  o.theta = 0.5;  ...
 *   amrgrav_solver* s;  if (amrgrav_create(&o, &s) != AMRGRAV_OK) { ... amrgrav_last_error(NULL) ... }
 *   each step: amrgrav_compute_potential(s, n, x, y, z, mass, size, pot, ax, ay, az);
 *   amrgrav_destroy(s);
 * Units are the caller's (cgs by default: G = 6.674e-8); the potential is negative and solves lap(phi) = 4 pi G rho.
 * Arrays are plain doubles, one element per cell (centres, masses = density x volume, cube sides: cells are cubes,
 * one size each; a mesh with dx != dy or dz is not supported); the results land in the caller's order. Pass interior
 * cells only (no guard cells). Conventions (the potential's constant, the self term, periodic boxes): docs/coupling.md.
 * Fortran: native/include/amrgrav.f90 beside this header (module amrgrav, the same names over ISO_C_BINDING).
 * A solver keeps its buffers (device memory too) between calls. Calls on one solver must not overlap; separate
 * solvers may be used from separate threads. Nothing here aborts or exits: every failure is a status code plus a
 * message naming the problem (amrgrav_last_error).
 */
#ifndef AMRGRAV_H
#define AMRGRAV_H

#include <stddef.h>

#if defined(_WIN32)
#define AMRGRAV_API __declspec(dllexport)
#else
#define AMRGRAV_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes (the Node package's error codes). */
typedef enum amrgrav_status {
  AMRGRAV_OK = 0,
  AMRGRAV_INVALID_INPUT = 1,  /* bad cell data: NaN or negative mass, non-positive size, outside the box, ... */
  AMRGRAV_INVALID_OPTION = 2, /* an option out of range */
  AMRGRAV_OUT_OF_MEMORY = 3,  /* host or device memory */
  AMRGRAV_NO_DEVICE = 4,      /* backend CUDA asked for where this build or machine has none */
  AMRGRAV_INTERNAL = 5        /* a bug or a library failure */
} amrgrav_status;

typedef enum amrgrav_backend { AMRGRAV_BACKEND_AUTO = 0, AMRGRAV_BACKEND_CPU = 1, AMRGRAV_BACKEND_CUDA = 2 } amrgrav_backend;

/* Options; amrgrav_default_options fills every field (defaults in brackets). struct_size lets later versions add
 * fields without breaking callers compiled against this header. */
typedef struct amrgrav_options {
  size_t struct_size;   /* sizeof(amrgrav_options), set by amrgrav_default_options */
  double theta;         /* opening angle of the MAC d > l/theta + delta, in (0, 1]            [0.5] */
  int order;            /* 1 = monopole, 2 = monopole + quadrupole                             [2] */
  int mac;              /* 0 = Barnes (node cube side), 1 = Bonsai (tight box of its cells)   [0] */
  double G;             /* gravitational constant, caller's units                             [6.674e-8] */
  int backend;          /* amrgrav_backend; AUTO: CUDA when usable, else CPU                  [AUTO] */
  int accelerations;    /* nonzero: also compute -grad(phi)                                    [0] */
  int self_potential;   /* each cell's own term -c G m / h: 0 none, 1 the uniform cube's c = 2.3800774
                         * (the earlier default), 2 the cubic lattice's c = 2.8372975: point masses on a
                         * grid then sum to a smooth density's potential (bench/RESULTS.md, "Self term")  [2] */
  int leaf_size;        /* most cells in a tree leaf                                           [16] */
  int group_size;       /* points per walk group, cut at octree nodes of <= 32 x this (CUDA: <= 64); 0 = automatic:
                           cells 64; particles and probes 32 [0] */
  int threads;          /* CPU threads; 0: $OMP_NUM_THREADS (its first number) when set, else all hardware
                         * threads, read at amrgrav_create (amrgrav_build_info.default_threads)  [0] */
  int has_box;          /* nonzero: cells must lie in [box_lo, box_hi] (the domain)            [0] */
  double box_lo[3], box_hi[3];
  /* Added in 0.2 (callers built against an older header pass a smaller struct_size; these then keep their
   * defaults). Periodic axes x, y, z (nonzero = periodic; needs has_box: the box sides are the periods; both
   * backends, distributed too): the Ewald-corrected walk, zero-mean potential when all three are periodic. [0, 0, 0] */
  int periodic[3];
  int ewald_resolution; /* Ewald table points per half period of the shortest periodic side    [28] */
  /* Nonzero: amrgrav_compute_potential is a collective over MPI_COMM_WORLD (or amrgrav_set_communicator's), which
   * the caller initialised (MPI_Init before amrgrav_create): every rank passes its own cells (any number, none included) and gets the
   * potential of all ranks' cells, through locally essential trees; with backend CUDA (or AUTO where a rank
   * has a GPU) each rank's share runs on its GPU (node-local rank modulo the node's GPUs; periodic boxes on the
   * CPU), and a rank without a usable GPU makes every rank's call fail with AMRGRAV_NO_DEVICE. Needs a build
   * with MPI (amrgrav_features bit 3).                                                            [0] */
  int distributed;
  /* Fully periodic boxes (ignored otherwise): nonzero solves for the density contrast, the sources being each
   * cell's mass minus the mean density times its volume, m - (M/V_box) size^3, so the tree's error scales with the
   * perturbation rather than the whole mass; negative masses are then accepted (a caller may pass the contrast
   * itself). 0: the masses as given (none negative). Callers built without this field keep the default. [1] */
  int density_contrast;
  /* Added with amrgrav_version (older callers' smaller struct_size keeps these defaults). Periodic boxes: nonzero
   * lets groups smaller than a table spacing take the Ewald correction as one expansion about their centre (~1e-6
   * of the potential's largest magnitude from per-pair lookups, up to ~2e-5 on uniform grids); 0: a table lookup
   * per (cell, source) pair, the reference (slower).                                              [1] */
  int ewald_expansion;
  /* Group acceptance: 0 = box (the group's bounding box against the node: conservative), 1 = vote (the FLASH4 GPU
   * solver's per-cell warp vote: fewer interactions, slightly larger errors).                    [0] */
  int walk;
  /* Added with the FMM (issue #20; older callers' smaller struct_size keeps these defaults). Far-field method:
   * 0 = the tree walk (theta, order, mac, walk above), 1 = the fast multipole method (fmm_order, fmm_theta,
   * fmm_tolerance below; both backends in every box in one rank (isolated; fully periodic: the density contrast,
   * as the tree; 1 or 2 periodic axes: the masses as given and the tree's Green's function), and on the ranks of a
   * distributed solver in isolated and fully periodic boxes (CPU or GPU ranks, mixed at will: the LETs on the host,
   * each rank's own lists on its backend): a distributed solver in a partly periodic box is
   * AMRGRAV_INVALID_OPTION at the solve.                                                                         [0] */
  int method;
  int fmm_order;        /* FMM expansion order p, in [3, 7]                                     [7] */
  double fmm_theta;     /* FMM opening angle: M2L only when r_A + r_B < fmm_theta R, in (0, 1)   [0.65] */
  double fmm_tolerance; /* FMM error tolerance: each M2L's error bound <= this x a lower bound of the
                         * target's potential, in [0, 1); 0 = the opening angle alone             [2e-4] */
  /* Added with particles (issue #18; older callers' smaller struct_size keeps the default). The particles' softening
   * kernel in amrgrav_solve_system (no effect on cells): 0 = the compact cubic spline (SPH, Gadget) of radius
   * 2.8 eps, exactly Newtonian beyond; 1 = Plummer, -G m / sqrt(r^2 + eps^2). eps is the Plummer-equivalent length
   * for both: a particle's potential at its own centre is -G m / eps.                         [0] */
  int softening;
  /* Added with the FMM's acceleration rule (older callers' smaller struct_size keeps the default). method 1 with
   * accelerations in an isolated box: each M2L's bound of its error in the gradient must also be at most this x
   * G |M| / side^2 (|M| the total |mass|, side the root cube's), in [0, 1); 0 = the potential's rules alone (the
   * potential's lists: asking for accelerations then leaves the potential unchanged)            [5e-5] */
  double fmm_accel_tolerance;
} amrgrav_options;

typedef struct amrgrav_solver amrgrav_solver;

/* Timings (seconds) and counts of the last computation. Each phase is its own wall time and phases may overlap: the
 * CUDA backend's host block entry uploads a new mesh's densities while the keys, sort and build run, and downloads
 * the results of the walk's first chunks while the later ones walk (seconds_download: from the first chunk's results
 * to the last in the caller's arrays), so the phases need not add up to seconds_total. */
typedef struct amrgrav_stats {
  double seconds_total, seconds_upload, seconds_keys, seconds_build, seconds_moments, seconds_walk,
      seconds_download;
  double interactions_per_cell;
  double device_bytes_per_cell; /* 0 on the CPU */
  int backend;                  /* AMRGRAV_BACKEND_CPU or AMRGRAV_BACKEND_CUDA: the one that ran */
} amrgrav_stats;

AMRGRAV_API void amrgrav_default_options(amrgrav_options* options);

/* A solver with these options (checked here: a bad option fails now, not at the first step; with periodic axes this
 * includes the box's shape, its aspect ratio at most 16 and the Ewald table's size). With backend AUTO the GPU is
 * used when one is usable. On failure *solver is NULL and amrgrav_last_error(NULL) says why. */
AMRGRAV_API amrgrav_status amrgrav_create(const amrgrav_options* options, amrgrav_solver** solver);

/* The potential (and, with accelerations, ax, ay, az; else they may be NULL) of n cells. Inputs are not modified.
 * n = 0 is valid and does nothing.
 * Contract: x, y, z, mass, size, potential (and ax, ay, az with accelerations) must each hold at least n doubles.
 * The library cannot check this (a C array does not carry its length): a shorter array is undefined behaviour
 * (reads or writes past its end), not an error status. Everything else is checked: NULL arrays, NaN, negative
 * masses, sizes, cells outside the box, coincident cells, masses whose potential would overflow. */
AMRGRAV_API amrgrav_status amrgrav_compute_potential(amrgrav_solver* solver, size_t n, const double* x, const double* y,
                                         const double* z, const double* mass, const double* size, double* potential,
                                         double* ax, double* ay, double* az);

/* The message of the last failure of this solver; "" if none. NULL: of the last failed call on this thread that
 * had no solver to keep it (amrgrav_create, or a call given a NULL solver); "" after a successful amrgrav_create.
 * The string stays valid until the next call on the same solver (NULL: on this thread). */
AMRGRAV_API const char* amrgrav_last_error(const amrgrav_solver* solver);

/* Statistics of the solver's last successful computation. */
AMRGRAV_API amrgrav_status amrgrav_get_stats(const amrgrav_solver* solver, amrgrav_stats* stats);

/* What this build has: bit 0 CPU (always), bit 1 CUDA built, bit 2 a usable CUDA device now, bit 3 MPI. */
AMRGRAV_API int amrgrav_features(void);

AMRGRAV_API void amrgrav_destroy(amrgrav_solver* solver);

/* The library's version, "major.minor.patch" (the npm package's); a static string. */
AMRGRAV_API const char* amrgrav_version(void);

/* What this build and machine have (amrgrav_features as fields, and more). */
typedef struct amrgrav_build_info {
  size_t struct_size;  /* set by the caller: sizeof(amrgrav_build_info); fields past it are not written */
  int cuda_built;      /* the CUDA backend was compiled in */
  int cuda_devices;    /* CUDA devices the driver reports (0 without CUDA or a driver) */
  int cuda_usable;     /* device 0 is usable now (backend AUTO picks it) */
  int mpi_built;       /* the distributed solve was compiled in (an MPI library was found) */
  int default_threads; /* what threads = 0 means now: $OMP_NUM_THREADS when set, else the hardware threads */
} amrgrav_build_info;
AMRGRAV_API amrgrav_status amrgrav_get_build_info(amrgrav_build_info* info);

/* Warnings of this solver's last amrgrav_create or amrgrav_compute_potential (calls that succeeded all the same),
 * "" if none (NULL: of the last amrgrav_create on this thread). Today: the Ewald table of a periodic box was built but could not be
 * cached on disk (no cache directory, or it is not writable: every new process builds it again; set
 * AMRGRAV_CACHE_DIR), and an $OMP_NUM_THREADS that is not a positive integer. Valid until the next call on it. */
AMRGRAV_API const char* amrgrav_last_warning(const amrgrav_solver* solver);

/* Distributed solvers (options.distributed): the collective runs over this communicator instead of MPI_COMM_WORLD,
 * e.g. a hydro code's mesh communicator or part of a split. `fortran_comm` is its Fortran handle (MPI_Fint, an int
 * in Open MPI and MPICH): Fortran passes the integer communicator (mpi_f08: comm%MPI_VAL), C passes
 * MPI_Comm_c2f(comm). The library duplicates it (collective over it: call on every rank of it, after amrgrav_create,
 * before the first amrgrav_compute_potential) and frees the duplicate in amrgrav_destroy (call that before
 * MPI_Finalize). Every rank of the communicator must then call amrgrav_compute_potential together; a communicator of
 * one rank solves that rank's cells alone. Fails with AMRGRAV_INVALID_OPTION on a solver created without
 * distributed, or in a build without MPI. */
AMRGRAV_API amrgrav_status amrgrav_set_communicator(amrgrav_solver* solver, int fortran_comm);

/* ---- The block entry (issue #17): leaf blocks in, the potential back in the same layout ----
 *
 * A block-structured AMR code (FLASH/PARAMESH style) passes its leaf blocks: per block the lower corner of its
 * interior and its cell widths, and a pointer to the density in its own layout (guard cells and a variable stride
 * allowed, float64 or float32). Cell centres, sizes and masses are made inside the library (on the GPU with the CUDA
 * backend: only the density crosses PCIe, one number per cell), and the results come back in the density's layout
 * and dtype, interior cells only (guard cells are not written). Cell (i, j, k) of block b (0-based, interior):
 *   x = lo[3b] + (i + 0.5) dx[3b]   (y, z likewise),   size = dx[3b],   mass = density (dx dy dz)
 * with each operation rounded as written (no FMA): the result is bitwise that of amrgrav_compute_potential on those
 * cells in block order (i fastest). The field element of cell (i, j, k) of the block stored at slot s is
 *   s * block_stride + var_stride * (((k + gz) * NY + (j + gy)) * NX + (i + gx)),   NX = nxb + 2 gx, ...
 * e.g. FLASH's unk(NUNK_VARS, NX, NY, NZ, MAXBLOCKS): density = &unk(DENS_VAR, 1, 1, 1, 1), var_stride = NUNK_VARS,
 * guard = NGUARD, block_index = the leaf blocks' numbers minus 1, and potential = &unk(GPOT_VAR, 1, 1, 1, 1).
 *
 * Reuse between steps: when the blocks' geometry (n_blocks, nxb/nyb/nzb, lo, dx) and the tree options equal the
 * previous block call's on this solver, the keys, order, tree topology and groups are kept and only what depends on
 * the masses is recomputed (amrgrav_tree_reused says whether it was). The comparison is bitwise over lo and dx
 * (6 doubles per block: cheap); mesh_changed = 1 skips it and rebuilds. On the GPU an amrgrav_compute_potential call
 * on the same solver in between forgets the kept tree (it reuses the device memory). */
typedef enum amrgrav_dtype { AMRGRAV_FLOAT64 = 0, AMRGRAV_FLOAT32 = 1 } amrgrav_dtype;

typedef struct amrgrav_blocks {
  size_t struct_size;     /* sizeof(amrgrav_blocks), set by amrgrav_default_blocks */
  size_t n_blocks;        /* leaf blocks passed                                                       [0] */
  int nxb, nyb, nzb;      /* interior cells per block along x, y, z                                   [8, 8, 8] */
  int guard[3];           /* guard cells per side along x, y, z in the field arrays                  [0, 0, 0] */
  const double* lo;       /* 3 per block: lower corner of the block's interior (host memory)            */
  const double* dx;       /* 3 per block: cell widths dx, dy, dz (cubes: equal within 1e-12; host memory) */
  const int* block_index; /* optional: the storage slot (0-based) of block b in the field arrays (host
                           * memory); NULL: slot b                                                      [NULL] */
  const void* density;    /* g/cm^3 (caller's units), in the layout above; a device pointer for
                           * amrgrav_compute_blocks_device                                                  */
  int dtype;              /* amrgrav_dtype of the density and of the results                           [FLOAT64] */
  size_t var_stride;      /* elements between neighbouring cells (FLASH's unk: NUNK_VARS)              [1] */
  size_t block_stride;    /* elements between block slots; 0: var_stride * NX * NY * NZ                 [0] */
  int mesh_changed;       /* nonzero: the mesh changed since the last call (rebuild without comparing) [0] */
} amrgrav_blocks;

AMRGRAV_API void amrgrav_default_blocks(amrgrav_blocks* blocks);

/* The potential (and, with accelerations, ax, ay, az; else they may be NULL) of the blocks' interior cells,
 * written in the density's layout and dtype (float32 density: float32 results, rounded from the double results).
 * Host memory. n_blocks = 0 is valid and does nothing (a distributed solver still takes part in the collective).
 * Checked: NULL pointers, zero sizes, NaN/infinite corners or widths, non-positive widths, non-cubic cells, cells
 * outside the box, negative or NaN densities (outside fully periodic boxes with density_contrast), overlapping
 * strides; errors name the block and cell. As for amrgrav_compute_potential, the arrays' lengths cannot be checked:
 * every slot block_index names must exist in the density and result arrays.
 * On the GPU, on an unchanged mesh, a density in page-locked host memory (the caller's cudaMallocHost or
 * cudaHostRegister, kept so for the call) with var_stride 1 and no guard cells is read by the device in place over
 * PCIe rather than copied through pinned buffers by host threads (whose memcpy the host's memory bandwidth bounds):
 * the same results, bitwise. */
AMRGRAV_API amrgrav_status amrgrav_compute_blocks(amrgrav_solver* solver, const amrgrav_blocks* blocks,
                                                  void* potential, void* ax, void* ay, void* az);

/* The same with the density and the results in device memory (cudaMalloc'd, or managed, on the solver's GPU,
 * device 0); blocks->lo, dx and block_index stay host arrays (small). Needs a solver running on the CUDA backend
 * (AMRGRAV_NO_DEVICE otherwise; not distributed). No per-cell data crosses PCIe: the cells are made from the
 * density on the device and the results are written into the caller's arrays on the device (what does cross: the
 * blocks' geometry when the mesh changed, 48 bytes per block; block_index, 4 bytes per block, every call; a few
 * bytes of counters and reductions; fully periodic boxes: one double per 65536 cells for the contrast's total and
 * the mean potential). Method 1 (the FMM) takes it in isolated boxes (its cells made on the device likewise, nothing
 * kept between calls); in periodic boxes it is AMRGRAV_INVALID_OPTION (use amrgrav_compute_blocks).
 * Synchronisation: the call's device work is ordered after the work already enqueued on cuda_stream (a
 * cudaStream_t; NULL: the legacy default stream) by an event, without blocking the host, and the call returns once
 * the results are in the caller's arrays (it synchronises internally: the tree build and the walk read counters
 * back, so it cannot return with work in flight); work enqueued on cuda_stream afterwards sees them, and so does
 * the host. Do not write the density or read the results on another stream while the call runs. */
AMRGRAV_API amrgrav_status amrgrav_compute_blocks_device(amrgrav_solver* solver, const amrgrav_blocks* blocks,
                                                         void* potential, void* ax, void* ay, void* az,
                                                         void* cuda_stream);

/* 1 when the solver's last successful block computation kept the tree of the call before (unchanged mesh), 0 when
 * it built one, -1 for a NULL solver. */
AMRGRAV_API int amrgrav_tree_reused(const amrgrav_solver* solver);

/* ---- System solves (issue #18): cells, particles, probes and a subset of target cells in one call ----
 *
 * One solve over several kinds of points, each with its results in its own input order:
 *   cells:   sources and targets, as amrgrav_compute_potential takes them;
 *   particles: softened point masses (stars, sinks, dark matter), sources and targets: positions, masses (>= 0) and
 *            softening lengths eps (> 0, caller's length unit; per particle or one value for all), the kernel being
 *            options.softening. eps is the Plummer-equivalent length for both kernels: a particle's potential at its
 *            own centre is -G m / eps (the spline's radius is 2.8 eps). A pair is softened by max(eps_i, eps_j)
 *            (cells and probes have 0), so the cells' force on the particles is minus theirs on the cells. A
 *            particle has no self term. The particles form a tree of their own, which cells, particles and probes
 *            walk with the box MAC plus a softening rule (walk = 1, vote, applies to the cells' tree only).
 *            Not yet supported (AMRGRAV_INVALID_OPTION): periodic axes;
 *   probes:  targets only, any position (a coupled code's get-gravity-at-point, analysis points): the field of the
 *            cells and particles there. A probe has no mass and no self term; a probe on a particle gets its softened
 *            -G m / eps; a probe exactly at a cell's centre gets every source but that cell's own point term (1/0, left out as a cell leaves out its own pair), so with the same
 *            interaction lists (direct summation, small theta) it equals the cell's potential without its self
 *            term. Isolated axes: anywhere (also outside the box); periodic axes: wrapped into the box; the isolated
 *            axes of a partly periodic box: inside the box (AMRGRAV_INVALID_INPUT otherwise). The probes walk the
 *            cells' tree in groups of their own (the leaves of an octree of at most group_size probes on the solve's
 *            Morton keys), with the same acceptance rule and kernels on the CPU and the GPU;
 *   targets: optional, compute only these cells (0-based indices, each at most once): every cell stays a source,
 *            the potential at each target is bitwise that of the full solve, and only the walk groups holding
 *            targets are walked (the walk's cost falls with the subset: per-level or active-subset solves).
 * Distributed solvers: a collective, each rank passes its own cells, probes, particles and targets (indices into its
 * own cells; bitwise the same ranks' solve without the subset at those cells), on CPU and GPU ranks alike; a bad
 * index on one rank is that rank's AMRGRAV_INVALID_INPUT on every rank.
 * amrgrav_get_stats then describes this call (interactions per cell computed).
 * Versions: the particles' fields were added at the end of amrgrav_system and amrgrav_system_results; a caller built
 * against the header before them passes the smaller struct_size and solves cells and probes as before. */
typedef struct amrgrav_system {
  size_t struct_size;       /* sizeof(amrgrav_system), set by amrgrav_default_system */
  size_t n_cells;           /* cells: x, y, z, mass, size as for amrgrav_compute_potential           [0] */
  const double *x, *y, *z, *mass, *size;
  size_t n_probes;          /* probes: probe_x, probe_y, probe_z                                        [0] */
  const double *probe_x, *probe_y, *probe_z;
  const unsigned int* targets; /* optional: the cells to compute (0-based); NULL: every cell            [NULL] */
  size_t n_targets;         /* entries of targets (0 with targets set: no cell is computed)              [0] */
  int direct;               /* nonzero: O(N^2) direct summation over the cells (and particles) at every
                             * target (isolated boxes; never distributed: each rank sums over its own
                             * cells), the reference for the tree                                        [0] */
  /* Added with particles: */
  size_t n_particles;       /* particles: particle_x, _y, _z, _mass (and _softening when set)           [0] */
  const double *particle_x, *particle_y, *particle_z, *particle_mass;
  const double* particle_softening; /* eps per particle; NULL: `softening` for every particle        [NULL] */
  double softening;         /* eps of every particle when particle_softening is NULL                   [0] */
} amrgrav_system;

/* Where amrgrav_solve_system writes (host memory; ax, ay, az only with accelerations, else they may be NULL). */
typedef struct amrgrav_system_results {
  size_t struct_size;       /* sizeof(amrgrav_system_results), set by amrgrav_default_system_results */
  double *potential, *ax, *ay, *az;   /* cells: n_cells values, or n_targets in the targets' order */
  double *probe_potential, *probe_ax, *probe_ay, *probe_az;  /* n_probes values */
  /* Added with particles: n_particles values each, in the particles' order. */
  double *particle_potential, *particle_ax, *particle_ay, *particle_az;
} amrgrav_system_results;

AMRGRAV_API void amrgrav_default_system(amrgrav_system* system);
AMRGRAV_API void amrgrav_default_system_results(amrgrav_system_results* results);

/* The system solve. As for amrgrav_compute_potential, the arrays' lengths cannot be checked (n_cells, n_particles,
 * n_probes, n_targets elements each); everything else is: NULL arrays, struct_size, the cells' checks, particles
 * (NaN/Inf, negative mass, softening not > 0, outside the box: "particle i: ..."), probes (NaN/Inf,
 * outside the box along an isolated axis of a periodic box: "probe i: ..."), targets ("targets[k] = v is not a cell
 * index", "... repeats targets[j]"). */
AMRGRAV_API amrgrav_status amrgrav_solve_system(amrgrav_solver* solver, const amrgrav_system* system,
                                                const amrgrav_system_results* results);

#ifdef __cplusplus
}
#endif

#endif /* AMRGRAV_H */
