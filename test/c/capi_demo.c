/* A C caller of libamrgrav (native/include/amrgrav.h), as a hydro code would be: random cells in a unit box, the
 * tree potential and accelerations against an O(N^2) direct sum written here, reuse of the solver, and the
 * error paths. Prints one JSON object; exit status 0 when every check passed. Built and run by
 * test/c-api.test.ts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amrgrav.h"

static unsigned long long state = 12345;
static double rnd(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(state >> 11) / 9007199254740992.0;
}

int main(void) {
  enum { N = 3000 };
  static double x[N], y[N], z[N], m[N], h[N], pot[N], ax[N], ay[N], az[N], ref[N], gref[3][N];
  const double G = 1.0, cubeSelf = 2.380077363979554;
  for (int i = 0; i < N; ++i) {
    x[i] = rnd(); y[i] = rnd(); z[i] = rnd();
    m[i] = 0.5 + rnd(); h[i] = 1e-3;
  }
  /* the reference: point masses plus each cell's uniform-cube self-potential */
  for (int i = 0; i < N; ++i) {
    double p = cubeSelf * m[i] / h[i], g[3] = {0, 0, 0};
    for (int j = 0; j < N; ++j) {
      if (j == i) continue;
      const double dx = x[i] - x[j], dy = y[i] - y[j], dz = z[i] - z[j];
      const double r = sqrt(dx * dx + dy * dy + dz * dz);
      p += m[j] / r;
      g[0] += m[j] * dx / (r * r * r); g[1] += m[j] * dy / (r * r * r); g[2] += m[j] * dz / (r * r * r);
    }
    ref[i] = -G * p;
    for (int d = 0; d < 3; ++d) gref[d][i] = -G * g[d];
  }

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.theta = 0.3;
  o.G = G;
  o.accelerations = 1;
  o.self_potential = 1; /* the cube term, as the reference above */
  amrgrav_solver* s = NULL;
  int ok = 1;
  amrgrav_status st = amrgrav_create(&o, &s);
  if (st != AMRGRAV_OK) {
    printf("{\"error\":\"create: %s\"}\n", amrgrav_last_error(NULL));
    return 1;
  }
  double maxPot = 0, maxAcc = 0, gmax = 0;
  for (int step = 0; step < 2; ++step) { /* a second step reuses the solver */
    for (int i = 0; i < N; ++i) pot[i] = ax[i] = ay[i] = az[i] = NAN;
    st = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, ax, ay, az);
    if (st != AMRGRAV_OK) {
      printf("{\"error\":\"compute: %s\"}\n", amrgrav_last_error(s));
      return 1;
    }
  }
  for (int i = 0; i < N; ++i) {
    const double e = fabs(pot[i] - ref[i]) / fabs(ref[i]);
    if (!(e <= maxPot)) maxPot = e; /* also catches NaN */
    const double da[3] = {ax[i] - gref[0][i], ay[i] - gref[1][i], az[i] - gref[2][i]};
    const double ea = sqrt(da[0] * da[0] + da[1] * da[1] + da[2] * da[2]);
    if (!(ea <= maxAcc)) maxAcc = ea;
    const double gm = sqrt(gref[0][i] * gref[0][i] + gref[1][i] * gref[1][i] + gref[2][i] * gref[2][i]);
    if (gm > gmax) gmax = gm;
  }
  amrgrav_stats stats;
  amrgrav_get_stats(s, &stats);

  /* error paths: a negative mass is named; the solver stays usable */
  m[17] = -1;
  const amrgrav_status badMass = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, ax, ay, az);
  char badMassMsg[256];
  snprintf(badMassMsg, sizeof badMassMsg, "%s", amrgrav_last_error(s));
  m[17] = 1;
  const amrgrav_status again = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, ax, ay, az);
  const amrgrav_status nullArrays = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, NULL, NULL, NULL);
  const amrgrav_status empty = amrgrav_compute_potential(s, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  /* two cells at one centre are named, not silently ignoring each other */
  const double keep[3] = {x[40], y[40], z[40]};
  x[40] = x[3]; y[40] = y[3]; z[40] = z[3];
  const amrgrav_status coincident = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, ax, ay, az);
  char coincidentMsg[256];
  snprintf(coincidentMsg, sizeof coincidentMsg, "%s", amrgrav_last_error(s));
  x[40] = keep[0]; y[40] = keep[1]; z[40] = keep[2];
  /* a mass whose potential would overflow (-Inf) is refused */
  m[5] = 1e306;
  const amrgrav_status huge = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, ax, ay, az);
  char hugeMsg[256];
  snprintf(hugeMsg, sizeof hugeMsg, "%s", amrgrav_last_error(s));
  m[5] = 1;
  amrgrav_destroy(s);

  /* a NULL solver (amrgrav_create failed and the caller went on): a status, and a message on this thread */
  const amrgrav_status nullSolver = amrgrav_compute_potential(NULL, N, x, y, z, m, h, pot, NULL, NULL, NULL);
  char nullSolverMsg[256];
  snprintf(nullSolverMsg, sizeof nullSolverMsg, "%s", amrgrav_last_error(NULL));
  amrgrav_stats nullStats;
  const amrgrav_status nullSolverStats = amrgrav_get_stats(NULL, &nullStats);
  char nullStatsMsg[256];
  snprintf(nullStatsMsg, sizeof nullStatsMsg, "%s", amrgrav_last_error(NULL));

  /* a bad option fails at create, with a message */
  amrgrav_options bad;
  amrgrav_default_options(&bad);
  bad.theta = 2;
  amrgrav_solver* s2 = NULL;
  const amrgrav_status badTheta = amrgrav_create(&bad, &s2);
  char badThetaMsg[256];
  snprintf(badThetaMsg, sizeof badThetaMsg, "%s", amrgrav_last_error(NULL));

  /* self_potential: 2 selects the lattice term (one lone cell: its potential is the term alone); 3 is refused */
  amrgrav_options so;
  amrgrav_default_options(&so);
  so.G = 1;
  so.self_potential = 2;
  amrgrav_solver* ss = NULL;
  double latticeCoefficient = 0;
  if (amrgrav_create(&so, &ss) == AMRGRAV_OK) {
    const double one[1] = {0}, mass1[1] = {3}, size1[1] = {0.5};
    double pot1[1] = {0};
    if (amrgrav_compute_potential(ss, 1, one, one, one, mass1, size1, pot1, NULL, NULL, NULL) == AMRGRAV_OK)
      latticeCoefficient = -pot1[0] * size1[0] / mass1[0];
    amrgrav_destroy(ss);
  }
  so.self_potential = 3;
  amrgrav_solver* ss3 = NULL;
  const amrgrav_status badSelf = amrgrav_create(&so, &ss3);

  /* a fully periodic box (AUTO: the GPU where there is one): the potential moves with the masses when all of them are shifted by a
   * fraction of the box with wrap-around (translation invariance), to the tree's accuracy */
  amrgrav_options po;
  amrgrav_default_options(&po);
  po.G = G;
  po.theta = 0.3;
  po.periodic[0] = po.periodic[1] = po.periodic[2] = 1;
  amrgrav_solver* noBox = NULL;
  const amrgrav_status periodicNoBox = amrgrav_create(&po, &noBox);
  po.has_box = 1;
  for (int d = 0; d < 3; ++d) { po.box_lo[d] = 0; po.box_hi[d] = 1; }
  amrgrav_solver* ps = NULL;
  double maxShift = 1, potScale = 0;
  int periodicBackend = -1;
  if (amrgrav_create(&po, &ps) == AMRGRAV_OK) {
    static double sx[N], sy[N], sz[N], p0[N], p1[N];
    for (int i = 0; i < N; ++i) {
      sx[i] = fmod(x[i] + 0.37, 1.0); sy[i] = fmod(y[i] + 0.21, 1.0); sz[i] = fmod(z[i] + 0.53, 1.0);
    }
    if (amrgrav_compute_potential(ps, N, x, y, z, m, h, p0, NULL, NULL, NULL) == AMRGRAV_OK &&
        amrgrav_compute_potential(ps, N, sx, sy, sz, m, h, p1, NULL, NULL, NULL) == AMRGRAV_OK) {
      maxShift = 0;
      for (int i = 0; i < N; ++i) {
        if (fabs(p0[i]) > potScale) potScale = fabs(p0[i]);
        if (!(fabs(p1[i] - p0[i]) <= maxShift)) maxShift = fabs(p1[i] - p0[i]);
      }
      maxShift /= potScale;
      amrgrav_stats ps_stats;
      amrgrav_get_stats(ps, &ps_stats);
      periodicBackend = ps_stats.backend;
    } else {
      printf("{\"error\":\"periodic: %s\"}\n", amrgrav_last_error(ps));
      return 1;
    }
    amrgrav_destroy(ps);
  }

  /* density_contrast (default 1): a fully periodic solve takes signed masses (the caller's own contrast); 0 takes
   * the masses as given and rejects a negative one */
  const int contrastDefault = po.density_contrast;
  int signedWithContrast = -1, signedWithout = -1;
  {
    enum { NS = 64 };
    static double sm[NS];
    for (int i = 0; i < NS; ++i) sm[i] = m[i] - 1.0; /* m in [0.5, 1.5): about half negative */
    for (int c = 1; c >= 0; --c) {
      po.density_contrast = c;
      amrgrav_solver* cs = NULL;
      if (amrgrav_create(&po, &cs) != AMRGRAV_OK) return 1;
      const amrgrav_status st = amrgrav_compute_potential(cs, NS, x, y, z, sm, h, pot, NULL, NULL, NULL);
      if (c) signedWithContrast = st; else signedWithout = st;
      amrgrav_destroy(cs);
    }
  }

  ok = ok && periodicNoBox == AMRGRAV_INVALID_OPTION && noBox == NULL && maxShift < 1e-3 &&
       (periodicBackend == AMRGRAV_BACKEND_CPU || periodicBackend == AMRGRAV_BACKEND_CUDA);
  ok = ok && maxPot < 1e-4 && maxAcc / gmax < 1e-2 && badMass == AMRGRAV_INVALID_INPUT &&
       strstr(badMassMsg, "cell 17: mass is negative") != NULL && again == AMRGRAV_OK &&
       nullArrays == AMRGRAV_INVALID_INPUT && empty == AMRGRAV_OK && badTheta == AMRGRAV_INVALID_OPTION &&
       s2 == NULL && strstr(badThetaMsg, "theta") != NULL && badSelf == AMRGRAV_INVALID_OPTION && ss3 == NULL;
  ok = ok && contrastDefault == 1 && signedWithContrast == AMRGRAV_OK && signedWithout == AMRGRAV_INVALID_INPUT;
  printf("{\"cells\":%d,\"backend\":%d,\"features\":%d,\"maxRelPotentialError\":%.3e,\"maxAccelerationErrorOverMax\":%.3e,"
         "\"interactionsPerCell\":%.1f,\"badMass\":%d,\"badMassMessage\":\"%s\",\"recovered\":%d,\"nullArrays\":%d,"
         "\"empty\":%d,\"badTheta\":%d,\"badThetaMessage\":\"%s\",\"periodicNoBox\":%d,\"periodicShiftError\":%.3e,"
         "\"periodicBackend\":%d,\"latticeCoefficient\":%.15g,\"badSelf\":%d,\"coincident\":%d,\"coincidentMessage\":\"%s\","
         "\"huge\":%d,\"hugeMessage\":\"%s\",\"nullSolver\":%d,\"nullSolverMessage\":\"%s\",\"nullSolverStats\":%d,"
         "\"nullStatsMessage\":\"%s\",\"densityContrastDefault\":%d,\"signedWithContrast\":%d,\"signedWithout\":%d,"
         "\"ok\":%s}\n",
         N, stats.backend, amrgrav_features(), maxPot, maxAcc / gmax, stats.interactions_per_cell, badMass, badMassMsg,
         again, nullArrays, empty, badTheta, badThetaMsg, periodicNoBox, maxShift, periodicBackend, latticeCoefficient,
         badSelf, coincident, coincidentMsg, huge, hugeMsg, nullSolver, nullSolverMsg, nullSolverStats, nullStatsMsg,
         contrastDefault, signedWithContrast, signedWithout, ok ? "true" : "false");
  return ok ? 0 : 1;
}
