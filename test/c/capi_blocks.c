/* The block entry of the C API (amrgrav_compute_blocks, issue #17) on the CPU backend: a FLASH-like unk array
 * (variables fastest, guard cells, leaf blocks at scattered slots) in, the potential back in unk's own layout.
 * Checks, printed as one JSON object (test/c-blocks.test.ts reads it):
 *   - bitwise equality with amrgrav_compute_potential on the same cells (made here with the documented formula),
 *     float64 and float32, with accelerations;
 *   - the tree against this program's own direct sum;
 *   - guard cells and other variables untouched;
 *   - reuse: new densities on the same mesh keep the tree and give bitwise a fresh solver's result;
 *   - error paths (non-cubic cells, negative density, NULL density, struct_size, the device entry on the CPU). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amrgrav.h"

#define NXB 8
#define NYB 8
#define NZB 8
#define NG 2
#define NX (NXB + 2 * NG)
#define NY (NYB + 2 * NG)
#define NZ (NZB + 2 * NG)
#define NVAR 3 /* 0: something else, 1: density, 2: potential */
#define DENS 1
#define GPOT 2
#define MAXB 40
#define CPB (NXB * NYB * NZB)

/* element of (var, i, j, k) of a slot, i, j, k interior-based (guard cells at -NG..-1): the API's pointers are
 * at the field's first element, guard cells included (Fortran's &unk(VAR, 1, 1, 1, 1)) */
static size_t elem(int slot, int var, int i, int j, int k) {
  return (size_t)var + NVAR * ((size_t)(i + NG) + NX * ((size_t)(j + NG) + NY * ((size_t)(k + NG) + (size_t)NZ * slot)));
}

/* 8 root blocks of the unit cube; root block 7 refined into 8 children: 15 leaves */
static int nleaves;
static double lo[3 * 16], dx[3 * 16];
static int slot[16];

static void makeMesh(void) {
  nleaves = 0;
  for (int b = 0; b < 8; ++b) {
    const int bx = b & 1, by = (b >> 1) & 1, bz = b >> 2;
    if (b == 7) {
      for (int c = 0; c < 8; ++c) {
        const int cx = c & 1, cy = (c >> 1) & 1, cz = c >> 2;
        lo[3 * nleaves + 0] = 0.5 + 0.25 * cx;
        lo[3 * nleaves + 1] = 0.5 + 0.25 * cy;
        lo[3 * nleaves + 2] = 0.5 + 0.25 * cz;
        for (int d = 0; d < 3; ++d) dx[3 * nleaves + d] = 0.25 / NXB;
        ++nleaves;
      }
    } else {
      lo[3 * nleaves + 0] = 0.5 * bx;
      lo[3 * nleaves + 1] = 0.5 * by;
      lo[3 * nleaves + 2] = 0.5 * bz;
      for (int d = 0; d < 3; ++d) dx[3 * nleaves + d] = 0.5 / NXB;
      ++nleaves;
    }
  }
  for (int b = 0; b < nleaves; ++b) slot[b] = MAXB - 1 - 2 * b; /* scattered, reversed */
}

static double densityAt(double x, double y, double z, int step) {
  const double r2 = (x - 0.6) * (x - 0.6) + (y - 0.55) * (y - 0.55) + (z - 0.62) * (z - 0.62);
  return 1.0 + 5.0 * exp(-r2 / (0.02 + 0.01 * step)) + 0.1 * x;
}

static double centre(double l, int i, double h) { return l + (i + 0.5) * h; }

/* cells in block order, i fastest, with the documented formula; rho from unk (float64) or unk32 */
static void makeCells(const double* unk, const float* unk32, double* x, double* y, double* z, double* m, double* s) {
  size_t p = 0;
  for (int b = 0; b < nleaves; ++b)
    for (int k = 0; k < NZB; ++k)
      for (int j = 0; j < NYB; ++j)
        for (int i = 0; i < NXB; ++i, ++p) {
          const double* l = lo + 3 * b;
          const double* h = dx + 3 * b;
          x[p] = centre(l[0], i, h[0]);
          y[p] = centre(l[1], j, h[1]);
          z[p] = centre(l[2], k, h[2]);
          const double rho = unk ? unk[elem(slot[b], DENS, i, j, k)] : (double)unk32[elem(slot[b], DENS, i, j, k)];
          m[p] = rho * (h[0] * h[1] * h[2]);
          s[p] = h[0];
        }
}

static void fillDensity(double* unk, float* unk32, int step) {
  for (int b = 0; b < nleaves; ++b)
    for (int k = 0; k < NZB; ++k)
      for (int j = 0; j < NYB; ++j)
        for (int i = 0; i < NXB; ++i) {
          const double v = densityAt(centre(lo[3 * b], i, dx[3 * b]), centre(lo[3 * b + 1], j, dx[3 * b + 1]),
                                     centre(lo[3 * b + 2], k, dx[3 * b + 2]), step);
          if (unk) unk[elem(slot[b], DENS, i, j, k)] = v;
          if (unk32) unk32[elem(slot[b], DENS, i, j, k)] = (float)v;
        }
}

static amrgrav_blocks blocksOf(const void* density, int dtype) {
  amrgrav_blocks B;
  amrgrav_default_blocks(&B);
  B.n_blocks = (size_t)nleaves;
  B.nxb = NXB;
  B.nyb = NYB;
  B.nzb = NZB;
  B.guard[0] = B.guard[1] = B.guard[2] = NG;
  B.lo = lo;
  B.dx = dx;
  B.block_index = slot;
  B.density = density;
  B.dtype = dtype;
  B.var_stride = NVAR;
  return B;
}

int main(void) {
  makeMesh();
  const size_t total = (size_t)NVAR * NX * NY * NZ * MAXB, n = (size_t)nleaves * CPB;
  double* unk = malloc(total * sizeof(double));
  float* unk32 = malloc(total * sizeof(float));
  double* ax = malloc(total * sizeof(double));
  double* ay = malloc(total * sizeof(double));
  double* az = malloc(total * sizeof(double));
  double *x = malloc(n * 8), *y = malloc(n * 8), *z = malloc(n * 8), *m = malloc(n * 8), *s = malloc(n * 8);
  double *pot = malloc(n * 8), *gx = malloc(n * 8), *gy = malloc(n * 8), *gz = malloc(n * 8);
  for (size_t e = 0; e < total; ++e) {
    unk[e] = -777.0; /* sentinel: guard cells and unused slots must keep it */
    unk32[e] = -777.0f;
    ax[e] = ay[e] = az[e] = -777.0;
  }
  fillDensity(unk, unk32, 0);

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.backend = AMRGRAV_BACKEND_CPU;
  o.theta = 0.3;
  o.accelerations = 1;
  o.has_box = 1;
  for (int d = 0; d < 3; ++d) {
    o.box_lo[d] = 0;
    o.box_hi[d] = 1;
  }
  amrgrav_solver* solver = NULL;
  if (amrgrav_create(&o, &solver) != AMRGRAV_OK) {
    printf("{\"ok\": false, \"error\": \"create: %s\"}\n", amrgrav_last_error(NULL));
    return 1;
  }

  /* ---- float64: block entry vs the cell entry, bitwise */
  amrgrav_blocks B = blocksOf(&unk[elem(0, DENS, -NG, -NG, -NG)], AMRGRAV_FLOAT64);
  const int st = amrgrav_compute_blocks(solver, &B, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  if (st != AMRGRAV_OK) {
    printf("{\"ok\": false, \"error\": \"compute_blocks: %s\"}\n", amrgrav_last_error(solver));
    return 1;
  }
  const int reusedFirst = amrgrav_tree_reused(solver);
  makeCells(unk, NULL, x, y, z, m, s);
  if (amrgrav_compute_potential(solver, n, x, y, z, m, s, pot, gx, gy, gz) != AMRGRAV_OK) {
    printf("{\"ok\": false, \"error\": \"compute_potential: %s\"}\n", amrgrav_last_error(solver));
    return 1;
  }
  size_t bitwise = 0, p = 0;
  double maxDiff = 0;
  for (int b = 0; b < nleaves; ++b)
    for (int k = 0; k < NZB; ++k)
      for (int j = 0; j < NYB; ++j)
        for (int i = 0; i < NXB; ++i, ++p) {
          const double v = unk[elem(slot[b], GPOT, i, j, k)];
          const double a = ax[elem(slot[b], 0, i, j, k)], c = ay[elem(slot[b], 0, i, j, k)],
                       d = az[elem(slot[b], 0, i, j, k)];
          if (memcmp(&v, &pot[p], 8) == 0 && memcmp(&a, &gx[p], 8) == 0 && memcmp(&c, &gy[p], 8) == 0 &&
              memcmp(&d, &gz[p], 8) == 0)
            ++bitwise;
          if (fabs(v - pot[p]) > maxDiff) maxDiff = fabs(v - pot[p]);
        }
  /* untouched: guard cells of every variable, variable 0, unused slots; ax/ay/az were given at var stride NVAR
   * with offset 0 (their other elements untouched too) */
  size_t touchedOutside = 0;
  for (size_t e = 0; e < total; ++e) {
    const int var = (int)(e % NVAR);
    size_t c = e / NVAR;
    const int i = (int)(c % NX) - NG, j = (int)((c / NX) % NY) - NG, k = (int)((c / NX / NY) % NZ) - NG;
    const int sl = (int)(c / ((size_t)NX * NY * NZ));
    int leaf = 0;
    for (int b = 0; b < nleaves; ++b) leaf |= slot[b] == sl;
    const int interior = leaf && i >= 0 && i < NXB && j >= 0 && j < NYB && k >= 0 && k < NZB;
    if (!(interior && (var == DENS || var == GPOT)) && unk[e] != -777.0) ++touchedOutside;
    if (!(interior && var == 0) && (ax[e] != -777.0 || ay[e] != -777.0 || az[e] != -777.0)) ++touchedOutside;
  }

  /* ---- the tree against a direct sum over the same cells (this program's own) */
  double maxRel = 0;
  for (size_t a = 0; a < n; a += 7) {
    double phi = 0;
    for (size_t b = 0; b < n; ++b) {
      if (b == a) continue;
      const double rx = x[b] - x[a], ry = y[b] - y[a], rz = z[b] - z[a];
      phi -= m[b] / sqrt(rx * rx + ry * ry + rz * rz);
    }
    phi = o.G * (phi - 2.837297479480620 * m[a] / s[a]); /* the lattice self term (default) */
    const double rel = fabs(pot[a] - phi) / fabs(phi);
    if (rel > maxRel) maxRel = rel;
  }

  /* ---- reuse: new densities, same mesh; the kept tree gives bitwise a fresh solver's result */
  fillDensity(unk, NULL, 1);
  const double* potOut = &unk[elem(0, GPOT, -NG, -NG, -NG)];
  (void)potOut;
  if (amrgrav_compute_blocks(solver, &B, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az) != AMRGRAV_OK) {
    printf("{\"ok\": false, \"error\": \"reuse: %s\"}\n", amrgrav_last_error(solver));
    return 1;
  }
  const int reusedSecond = amrgrav_tree_reused(solver);
  double* kept = malloc(total * sizeof(double));
  memcpy(kept, unk, total * sizeof(double));
  amrgrav_solver* fresh = NULL;
  amrgrav_create(&o, &fresh);
  amrgrav_compute_blocks(fresh, &B, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  const int reusedFresh = amrgrav_tree_reused(fresh);
  const int reuseBitwise = memcmp(kept, unk, total * sizeof(double)) == 0;
  /* mesh_changed forces a rebuild (same result) */
  B.mesh_changed = 1;
  amrgrav_compute_blocks(solver, &B, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  const int reusedForced = amrgrav_tree_reused(solver);
  const int forcedBitwise = memcmp(kept, unk, total * sizeof(double)) == 0;
  B.mesh_changed = 0;
  /* a moved block: the comparison sees it and rebuilds */
  lo[0] += 1e-3;
  amrgrav_compute_blocks(solver, &B, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  const int reusedMoved = amrgrav_tree_reused(solver);
  lo[0] -= 1e-3;

  /* ---- float32: results rounded from the double results of the cells made from the float densities */
  float* pot32 = malloc(total * sizeof(float));
  float *ax32 = malloc(total * sizeof(float)), *ay32 = malloc(total * sizeof(float)), *az32 = malloc(total * sizeof(float));
  for (size_t e = 0; e < total; ++e) pot32[e] = ax32[e] = ay32[e] = az32[e] = -777.0f;
  amrgrav_blocks B32 = blocksOf(&unk32[elem(0, DENS, -NG, -NG, -NG)], AMRGRAV_FLOAT32);
  const int st32 = amrgrav_compute_blocks(fresh, &B32, &pot32[elem(0, GPOT, -NG, -NG, -NG)], ax32, ay32, az32);
  makeCells(NULL, unk32, x, y, z, m, s);
  amrgrav_compute_potential(fresh, n, x, y, z, m, s, pot, gx, gy, gz);
  size_t bitwise32 = 0;
  p = 0;
  for (int b = 0; b < nleaves; ++b)
    for (int k = 0; k < NZB; ++k)
      for (int j = 0; j < NYB; ++j)
        for (int i = 0; i < NXB; ++i, ++p) {
          const float v = pot32[elem(slot[b], GPOT, i, j, k)], w = (float)pot[p];
          const float a = ax32[elem(slot[b], 0, i, j, k)], aw = (float)gx[p];
          if (memcmp(&v, &w, 4) == 0 && memcmp(&a, &aw, 4) == 0) ++bitwise32;
        }

  /* ---- errors */
  amrgrav_blocks E = B;
  dx[3 * 3 + 1] *= 1.001; /* block 3 not cubic */
  const int nonCubic = amrgrav_compute_blocks(solver, &E, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  char nonCubicMessage[512];
  snprintf(nonCubicMessage, sizeof nonCubicMessage, "%s", amrgrav_last_error(solver));
  dx[3 * 3 + 1] /= 1.001;
  dx[3 * 3 + 1] = dx[3 * 3];
  const size_t badAt = elem(slot[2], DENS, 1, 2, 3);
  const double saved = unk[badAt];
  unk[badAt] = -2.5;
  const int negative = amrgrav_compute_blocks(solver, &E, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  char negativeMessage[512];
  snprintf(negativeMessage, sizeof negativeMessage, "%s", amrgrav_last_error(solver));
  unk[badAt] = saved;
  E.density = NULL;
  const int nullDensity = amrgrav_compute_blocks(solver, &E, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  E = B;
  E.struct_size = 8;
  const int badSize = amrgrav_compute_blocks(solver, &E, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az);
  const int device = amrgrav_compute_blocks_device(solver, &B, &unk[elem(0, GPOT, -NG, -NG, -NG)], ax, ay, az, NULL);
  char deviceMessage[512];
  snprintf(deviceMessage, sizeof deviceMessage, "%s", amrgrav_last_error(solver));
  E = B;
  E.n_blocks = 0;
  const int empty = amrgrav_compute_blocks(solver, &E, NULL, NULL, NULL, NULL);

  printf("{\"ok\": true, \"cells\": %zu, \"bitwise\": %zu, \"maxDiff\": %g, \"touchedOutside\": %zu, "
         "\"maxRelError\": %g, \"reusedFirst\": %d, \"reusedSecond\": %d, \"reusedFresh\": %d, "
         "\"reuseBitwise\": %d, \"reusedForced\": %d, \"forcedBitwise\": %d, \"reusedMoved\": %d, "
         "\"status32\": %d, \"bitwise32\": %zu, \"nonCubic\": %d, \"nonCubicMessage\": \"%s\", \"negative\": %d, "
         "\"negativeMessage\": \"%s\", \"nullDensity\": %d, \"badSize\": %d, \"device\": %d, "
         "\"deviceMessage\": \"%s\", \"empty\": %d}\n",
         n, bitwise, maxDiff, touchedOutside, maxRel, reusedFirst, reusedSecond, reusedFresh, reuseBitwise,
         reusedForced, forcedBitwise, reusedMoved, st32, bitwise32, nonCubic, nonCubicMessage, negative,
         negativeMessage, nullDensity, badSize, device, deviceMessage, empty);
  amrgrav_destroy(solver);
  amrgrav_destroy(fresh);
  return 0;
}
