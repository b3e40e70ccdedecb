/* The C API's method option (issue #20), as a C caller sees it: the defaults, method 1 (the FMM) against the tree at
 * a small opening angle in an isolated box and in a sheet (x and y periodic), an older caller's struct without the
 * field (the tree, bit for bit), the combinations not built yet refused at amrgrav_create, and fmm_accel_tolerance
 * (its default, a bad value refused, an older caller's struct without it: its default, whatever lies there). Prints one JSON
 * object; exit status 0 when every check passed. Built and run by test/c-api.test.ts. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>

#include "amrgrav.h"

enum { N = 24 * 24 * 24 };
static double x[N], y[N], z[N], m[N], h[N];

static amrgrav_status solve(const amrgrav_options* o, double* pot) {
  amrgrav_solver* s = NULL;
  amrgrav_status st = amrgrav_create(o, &s);
  if (st != AMRGRAV_OK) return st;
  st = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, NULL, NULL, NULL);
  amrgrav_destroy(s);
  return st;
}

static double maxRelDiff(const double* a, const double* b) {
  double d = 0;
  for (int i = 0; i < N; ++i)
    if (!(fabs(a[i] - b[i]) <= d * fabs(b[i]))) d = fabs(a[i] - b[i]) / fabs(b[i]);
  return d;
}

/* max |a - b| over max |b|: a sheet's potential may cross zero */
static double maxDiffOverMax(const double* a, const double* b) {
  double d = 0, s = 0;
  for (int i = 0; i < N; ++i) {
    d = fmax(d, fabs(a[i] - b[i]));
    s = fmax(s, fabs(b[i]));
  }
  return d / s;
}

static amrgrav_status create(const amrgrav_options* o) {
  amrgrav_solver* s = NULL;
  const amrgrav_status st = amrgrav_create(o, &s);
  amrgrav_destroy(s);
  return st;
}

int main(void) {
  static double tree[N], fine[N], fmm[N], old[N], sheetFine[N], sheetFmm[N];
  unsigned long long state = 7;
  for (int i = 0; i < N; ++i) { /* a 24^3 grid of random masses */
    x[i] = (i % 24 + 0.5) / 24; y[i] = (i / 24 % 24 + 0.5) / 24; z[i] = (i / 576 + 0.5) / 24; h[i] = 1.0 / 24;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    m[i] = 0.5 + (double)(state >> 11) / 9007199254740992.0;
  }
  amrgrav_options o;
  amrgrav_default_options(&o);
  o.backend = AMRGRAV_BACKEND_CPU;
  o.G = 1;
  const int defaults = o.method == 0 && o.fmm_order == 7 && o.fmm_theta == 0.65 && o.fmm_tolerance == 2e-4 &&
                       o.fmm_accel_tolerance == 5e-5;
  const amrgrav_status stTree = solve(&o, tree);
  o.theta = 0.1;
  const amrgrav_status stFine = solve(&o, fine);
  o.theta = 0.5;
  o.method = 1;
  const amrgrav_status stFmm = solve(&o, fmm);
  /* an older caller's struct ends before method: whatever lies there, the tree runs */
  amrgrav_options older = o;
  older.struct_size = offsetof(amrgrav_options, method);
  const amrgrav_status stOld = solve(&older, old);
  int oldSame = stOld == AMRGRAV_OK;
  for (int i = 0; i < N && oldSame; ++i) oldSame = old[i] == tree[i];
  amrgrav_options c = o;
  /* backend CUDA with a fully periodic box: the GPU's FMM takes it (NO_DEVICE where no GPU is usable) */
  c.backend = AMRGRAV_BACKEND_CUDA;
  c.has_box = 1;
  for (int d = 0; d < 3; ++d) { c.box_lo[d] = 0; c.box_hi[d] = 1; c.periodic[d] = 1; }
  const amrgrav_status cuda = create(&c);
  c = o;
  c.has_box = 1;
  /* a sheet (x and y periodic): the FMM against the tree at theta 0.2, the same Green's function and constant */
  for (int d = 0; d < 3; ++d) { c.box_lo[d] = 0; c.box_hi[d] = 1; c.periodic[d] = d < 2; }
  const amrgrav_status stSheet = solve(&c, sheetFmm);
  c.method = 0;
  c.theta = 0.2;
  const amrgrav_status stSheetFine = solve(&c, sheetFine);
  const double sheetVsFine = maxDiffOverMax(sheetFmm, sheetFine);
  c = o;
  c.method = 2;
  const amrgrav_status badMethod = create(&c);
  c = o;
  c.fmm_order = 9;
  const amrgrav_status badOrder = create(&c);
  c = o;
  c.fmm_accel_tolerance = -1;
  const amrgrav_status badAccel = create(&c);
  c.struct_size = offsetof(amrgrav_options, fmm_accel_tolerance); /* an older caller: the field is not read */
  const amrgrav_status olderAccel = create(&c);
  const double fmmVsFine = maxRelDiff(fmm, fine), treeVsFine = maxRelDiff(tree, fine);
  const int ok = defaults && stTree == AMRGRAV_OK && stFine == AMRGRAV_OK && stFmm == AMRGRAV_OK && oldSame &&
                 fmmVsFine < 2e-5 && fmmVsFine < treeVsFine && stSheet == AMRGRAV_OK && stSheetFine == AMRGRAV_OK &&
                 sheetVsFine < 1e-5 &&
                 badMethod == AMRGRAV_INVALID_OPTION && badOrder == AMRGRAV_INVALID_OPTION &&
                 badAccel == AMRGRAV_INVALID_OPTION && olderAccel == AMRGRAV_OK &&
                 (cuda == AMRGRAV_OK || cuda == AMRGRAV_NO_DEVICE);
  printf("{\"defaults\":%d,\"fmm\":%d,\"fmmVsFine\":%.3e,\"treeVsFine\":%.3e,\"oldSame\":%d,\"cuda\":%d,\"cudaUsable\":%d,"
         "\"sheet\":%d,\"sheetVsFine\":%.3e,\"badMethod\":%d,\"badOrder\":%d,\"badAccel\":%d,\"olderAccel\":%d,\"ok\":%s}\n",
         defaults, (int)stFmm, fmmVsFine, treeVsFine, oldSame, (int)cuda, (amrgrav_features() >> 2) & 1, (int)stSheet,
         sheetVsFine,
         (int)badMethod, (int)badOrder, (int)badAccel, (int)olderAccel, ok ? "true" : "false");
  return ok ? 0 : 1;
}
