/* The system solve of the C API (amrgrav_solve_system, issue #18) on the CPU backend: cells, probes and a subset of
 * target cells in one call. Checks, printed as one JSON object (test/c-system.test.ts reads it):
 *   - probes against this program's own direct sum (tree: within 2x of the cells' own error; direct: to rounding);
 *   - probes on cell centres with the self term off: the cells' potential (direct summation);
 *   - a subset of targets: bitwise amrgrav_compute_potential at those cells, in the targets' order;
 *   - error paths (NaN probe, repeated and out-of-range targets, struct_size). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amrgrav.h"

#define NSIDE 12
#define NC (NSIDE * NSIDE * NSIDE)
#define NP 48
#define NT 100

static double x[NC], y[NC], z[NC], m[NC], h[NC], pot[NC], ref[NC];
static double px[NP], py[NP], pz[NP], ppot[NP], pref[NP];
static unsigned int targets[NT];
static double tpot[NT];

static double directAt(double qx, double qy, double qz) {
  double s = 0;
  for (int i = 0; i < NC; i++) {
    const double dx = qx - x[i], dy = qy - y[i], dz = qz - z[i];
    const double r = sqrt(dx * dx + dy * dy + dz * dz);
    if (r > 0) s += m[i] / r;
  }
  return -s; /* G = 1 */
}

static double maxRel(const double* a, const double* b, int n) {
  double e = 0;
  for (int i = 0; i < n; i++) {
    const double d = fabs(a[i] - b[i]) / fabs(b[i]);
    if (d > e) e = d;
  }
  return e;
}

int main(void) {
  int p = 0;
  for (int k = 0; k < NSIDE; k++)
    for (int j = 0; j < NSIDE; j++)
      for (int i = 0; i < NSIDE; i++, p++) {
        x[p] = (i + 0.5) / NSIDE;
        y[p] = (j + 0.5) / NSIDE;
        z[p] = (k + 0.5) / NSIDE;
        h[p] = 1.0 / NSIDE;
        m[p] = (1.0 + 0.5 * sin(6.0 * x[p]) * cos(4.0 * y[p]) + z[p]) * h[p] * h[p] * h[p];
      }
  unsigned long long seed = 88172645463325252ULL;
  for (int q = 0; q < NP; q++) {
    if (q < 40) { /* random, some outside the unit cube */
      double u[3];
      for (int d = 0; d < 3; d++) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        u[d] = -0.25 + 1.5 * (double)(seed >> 11) / 9007199254740992.0;
      }
      px[q] = u[0]; py[q] = u[1]; pz[q] = u[2];
    } else { /* on cell centres */
      const int c = (q - 40) * 211;
      px[q] = x[c]; py[q] = y[c]; pz[q] = z[c];
    }
  }
  for (int t = 0; t < NT; t++) targets[t] = (unsigned int)((NC - 1) - 17 * t); /* descending, distinct */

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = 1;
  o.backend = AMRGRAV_BACKEND_CPU;
  o.self_potential = 0;
  amrgrav_solver* s;
  if (amrgrav_create(&o, &s) != AMRGRAV_OK) {
    printf("{\"ok\":false,\"error\":\"%s\"}\n", amrgrav_last_error(NULL));
    return 1;
  }
  for (int i = 0; i < NC; i++) ref[i] = directAt(x[i], y[i], z[i]);
  for (int q = 0; q < NP; q++) pref[q] = directAt(px[q], py[q], pz[q]);

  amrgrav_system sys;
  amrgrav_default_system(&sys);
  sys.n_cells = NC;
  sys.x = x; sys.y = y; sys.z = z; sys.mass = m; sys.size = h;
  sys.n_probes = NP;
  sys.probe_x = px; sys.probe_y = py; sys.probe_z = pz;
  amrgrav_system_results res;
  amrgrav_default_system_results(&res);
  res.potential = pot;
  res.probe_potential = ppot;
  const int treeStatus = amrgrav_solve_system(s, &sys, &res);
  const double cellErr = maxRel(pot, ref, NC), probeErr = maxRel(ppot, pref, NP);

  sys.direct = 1;
  const int directStatus = amrgrav_solve_system(s, &sys, &res);
  const double directErr = maxRel(ppot, pref, NP);
  double centreGap = 0; /* probes 40.. sit on cells (q - 40) * 211 */
  for (int q = 40; q < NP; q++) {
    const double g = fabs(ppot[q] - pot[(q - 40) * 211]) / fabs(pot[(q - 40) * 211]);
    if (g > centreGap) centreGap = g;
  }

  /* the subset: bitwise the full solve */
  sys.direct = 0;
  sys.n_probes = 0;
  sys.targets = targets;
  sys.n_targets = NT;
  res.potential = tpot;
  const int subsetStatus = amrgrav_solve_system(s, &sys, &res);
  amrgrav_stats st;
  amrgrav_get_stats(s, &st);
  const double subsetInteractions = st.interactions_per_cell;
  amrgrav_compute_potential(s, NC, x, y, z, m, h, pot, NULL, NULL, NULL);
  amrgrav_get_stats(s, &st);
  int bitwise = 0;
  for (int t = 0; t < NT; t++) bitwise += memcmp(&tpot[t], &pot[targets[t]], sizeof(double)) == 0;

  /* errors */
  sys.targets = NULL;
  sys.n_targets = 0;
  sys.n_probes = NP;
  res.potential = pot;
  px[3] = NAN;
  const int nanStatus = amrgrav_solve_system(s, &sys, &res);
  char nanMessage[256];
  snprintf(nanMessage, sizeof nanMessage, "%s", amrgrav_last_error(s));
  px[3] = 0.5;
  sys.n_probes = 0;
  unsigned int twice[3] = {5, 9, 5};
  sys.targets = twice;
  sys.n_targets = 3;
  res.potential = tpot;
  const int repeatStatus = amrgrav_solve_system(s, &sys, &res);
  char repeatMessage[256];
  snprintf(repeatMessage, sizeof repeatMessage, "%s", amrgrav_last_error(s));
  twice[2] = NC;
  const int rangeStatus = amrgrav_solve_system(s, &sys, &res);
  char rangeMessage[256];
  snprintf(rangeMessage, sizeof rangeMessage, "%s", amrgrav_last_error(s));
  sys.struct_size = 8;
  const int sizeStatus = amrgrav_solve_system(s, &sys, &res);
  amrgrav_destroy(s);

  printf("{\"ok\":true,\"treeStatus\":%d,\"cellErr\":%.6g,\"probeErr\":%.6g,\"directStatus\":%d,\"directErr\":%.6g,"
         "\"centreGap\":%.6g,\"subsetStatus\":%d,\"bitwise\":%d,\"targets\":%d,\"subsetInteractions\":%.6g,"
         "\"fullInteractions\":%.6g,\"nanStatus\":%d,\"nanMessage\":\"%s\",\"repeatStatus\":%d,"
         "\"repeatMessage\":\"%s\",\"rangeStatus\":%d,\"rangeMessage\":\"%s\",\"sizeStatus\":%d}\n",
         treeStatus, cellErr, probeErr, directStatus, directErr, centreGap, subsetStatus, bitwise, NT,
         subsetInteractions, st.interactions_per_cell, nanStatus, nanMessage, repeatStatus, repeatMessage, rangeStatus,
         rangeMessage, sizeStatus);
  return 0;
}
