/* Particles through the C API's system solve (amrgrav_solve_system, issue #18) on the CPU backend: cells and
 * softened particles in one call. Checks, printed as one JSON object (test/c-system.test.ts reads it):
 *   - direct summation at the particles and probes against this program's own softened sum (Plummer with one
 *     softening per particle; the spline with one value for all), to rounding;
 *   - the tree against direct summation at the particles;
 *   - callers built against the header before particles (smaller struct_size of amrgrav_options, amrgrav_system and
 *     amrgrav_system_results) still solve, with the spline kernel;
 *   - error paths (negative mass, softening 0, a bad kernel, NULL arrays, particles with the old results struct). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amrgrav.h"

#define NSIDE 8
#define NC (NSIDE * NSIDE * NSIDE)
#define NP 200
#define NQ 3

static double x[NC], y[NC], z[NC], m[NC], h[NC], pot[NC], pot2[NC];
static double qx[NP], qy[NP], qz[NP], qm[NP], qe[NP], qpot[NP], qref[NP], qtree[NP], qax[NP], qay[NP], qaz[NP];
static double prx[NQ], pry[NQ], prz[NQ], ppot[NQ], pref[NQ];
static double cax[NC], cay[NC], caz[NC], pax[NQ], pay[NQ], paz[NQ];

/* The softened kernel w (potential -m w) at distance r, pair softening e: Plummer or the cubic spline of radius
 * 2.8 e (Gadget's, Plummer-equivalent e); e = 0: Newtonian, 0 at r = 0. */
static double kernel(int plummer, double r, double e) {
  if (e > 0 && plummer) return 1.0 / sqrt(r * r + e * e);
  const double hs = 2.8 * e;
  if (r >= hs) return r > 0 ? 1.0 / r : 0.0;
  const double u = r / hs, u2 = u * u;
  if (u < 0.5) return (2.8 - u2 * (16.0 / 3.0) + 9.6 * u2 * u2 - 6.4 * u2 * u2 * u) / hs;
  return (3.2 - 1.0 / (15.0 * u) - (32.0 / 3.0) * u2 + 16.0 * u2 * u - 9.6 * u2 * u2 + (32.0 / 15.0) * u2 * u2 * u) / hs;
}

/* Potential at (px, py, pz), target softening te, of the cells and particles (particle `skip` left out), G = 1. */
static double directAt(int plummer, const double* eps, double one, double px, double py, double pz, double te,
                       int skip) {
  double s = 0;
  for (int i = 0; i < NC; i++) {
    const double dx = px - x[i], dy = py - y[i], dz = pz - z[i];
    s += m[i] * kernel(plummer, sqrt(dx * dx + dy * dy + dz * dz), te);
  }
  for (int j = 0; j < NP; j++) {
    if (j == skip) continue;
    const double dx = px - qx[j], dy = py - qy[j], dz = pz - qz[j];
    const double ej = eps ? eps[j] : one;
    s += qm[j] * kernel(plummer, sqrt(dx * dx + dy * dy + dz * dz), te > ej ? te : ej);
  }
  return -s;
}

static double maxRel(const double* a, const double* b, int n) {
  double e = 0;
  for (int i = 0; i < n; i++) {
    const double d = fabs(a[i] - b[i]) / fabs(b[i]);
    if (d > e) e = d;
  }
  return e;
}

static void setSystem(amrgrav_system* sys, amrgrav_system_results* res, const double* eps, double one) {
  amrgrav_default_system(sys);
  amrgrav_default_system_results(res);
  sys->n_cells = NC;
  sys->x = x; sys->y = y; sys->z = z; sys->mass = m; sys->size = h;
  sys->n_probes = NQ;
  sys->probe_x = prx; sys->probe_y = pry; sys->probe_z = prz;
  sys->n_particles = NP;
  sys->particle_x = qx; sys->particle_y = qy; sys->particle_z = qz; sys->particle_mass = qm;
  sys->particle_softening = eps;
  sys->softening = one;
  res->potential = pot; res->ax = cax; res->ay = cay; res->az = caz;
  res->probe_potential = ppot; res->probe_ax = pax; res->probe_ay = pay; res->probe_az = paz;
  res->particle_potential = qpot; res->particle_ax = qax; res->particle_ay = qay; res->particle_az = qaz;
}

int main(void) {
  int p = 0;
  for (int k = 0; k < NSIDE; k++)
    for (int j = 0; j < NSIDE; j++)
      for (int i = 0; i < NSIDE; i++, p++) {
        x[p] = (i + 0.5) / NSIDE; y[p] = (j + 0.5) / NSIDE; z[p] = (k + 0.5) / NSIDE;
        h[p] = 1.0 / NSIDE;
        m[p] = (1.0 + z[p]) * h[p] * h[p] * h[p];
      }
  unsigned long long seed = 88172645463325252ULL;
  for (int q = 0; q < NP; q++) {
    double u[5];
    for (int d = 0; d < 5; d++) {
      seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
      u[d] = (double)(seed >> 11) / 9007199254740992.0;
    }
    qx[q] = 0.3 + 0.4 * u[0]; qy[q] = 0.3 + 0.4 * u[1]; qz[q] = 0.3 + 0.4 * u[2];
    qm[q] = (0.5 + u[3]) / NP;
    qe[q] = 0.01 * (1.0 + 2.0 * u[4]);
  }
  prx[0] = 0.5; pry[0] = 0.5; prz[0] = 0.5;
  prx[1] = qx[7]; pry[1] = qy[7]; prz[1] = qz[7];
  prx[2] = 2.0; pry[2] = -1.0; prz[2] = 0.5;

  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = 1;
  o.backend = AMRGRAV_BACKEND_CPU;
  o.accelerations = 1;
  o.self_potential = 0;
  o.softening = 1; /* Plummer */
  amrgrav_solver* s;
  if (amrgrav_create(&o, &s) != AMRGRAV_OK) {
    printf("{\"ok\":false,\"error\":\"%s\"}\n", amrgrav_last_error(NULL));
    return 1;
  }
  amrgrav_system sys;
  amrgrav_system_results res;

  /* Plummer, one softening per particle: direct summation against this program's sum */
  setSystem(&sys, &res, qe, 0);
  sys.direct = 1;
  const int plummerStatus = amrgrav_solve_system(s, &sys, &res);
  for (int q = 0; q < NP; q++) qref[q] = directAt(1, qe, 0, qx[q], qy[q], qz[q], qe[q], q);
  for (int k = 0; k < NQ; k++) pref[k] = directAt(1, qe, 0, prx[k], pry[k], prz[k], 0, -1);
  const double plummerErr = maxRel(qpot, qref, NP);
  const double plummerProbeErr = maxRel(ppot, pref, NQ);
  double momentum = 0; /* net force of everything on everything: zero to rounding with direct sums */
  double scale = 0;
  for (int d = 0; d < 3; d++) {
    double f = 0, g = 0;
    const double* ca = d == 0 ? cax : d == 1 ? cay : caz;
    const double* qa = d == 0 ? qax : d == 1 ? qay : qaz;
    for (int i = 0; i < NC; i++) { f += m[i] * ca[i]; g += fabs(m[i] * ca[i]); }
    for (int q = 0; q < NP; q++) { f += qm[q] * qa[q]; g += fabs(qm[q] * qa[q]); }
    momentum += f * f;
    scale += g * g;
  }
  const double momentumGap = sqrt(momentum / scale);

  /* the tree at the particles against direct summation */
  sys.direct = 0;
  const int treeStatus = amrgrav_solve_system(s, &sys, &res);
  memcpy(qtree, qpot, sizeof qtree);
  const double treeErr = maxRel(qtree, qref, NP);
  amrgrav_destroy(s);

  /* a caller built before particles: smaller options (spline by default), old system and results structs */
  amrgrav_options old;
  amrgrav_default_options(&old);
  old.struct_size = offsetof(amrgrav_options, softening);
  old.G = 1;
  old.backend = AMRGRAV_BACKEND_CPU;
  old.self_potential = 0;
  old.softening = 1; /* past the old struct_size: not read */
  amrgrav_solver* so;
  const int oldCreate = amrgrav_create(&old, &so);
  setSystem(&sys, &res, NULL, 0.02);
  res.ax = res.ay = res.az = res.probe_ax = res.probe_ay = res.probe_az = NULL;
  res.particle_ax = res.particle_ay = res.particle_az = NULL;
  sys.direct = 1;
  const int splineStatus = amrgrav_solve_system(so, &sys, &res);
  for (int q = 0; q < NP; q++) qref[q] = directAt(0, NULL, 0.02, qx[q], qy[q], qz[q], 0.02, q);
  const double splineErr = maxRel(qpot, qref, NP);
  /* the probe on particle 7 against this program's sum (a probe's pairs take the source's softening alone) */
  pref[1] = directAt(0, NULL, 0.02, prx[1], pry[1], prz[1], 0, -1);
  const double onParticleGap = fabs(ppot[1] - pref[1]) / fabs(pref[1]);
  /* cells alone, new structs, then the old ones: the same, bitwise */
  sys.n_particles = 0;
  sys.n_probes = 0;
  const int cellsNew = amrgrav_solve_system(so, &sys, &res);
  memcpy(pot2, pot, sizeof pot2);
  sys.struct_size = offsetof(amrgrav_system, n_particles);
  res.struct_size = offsetof(amrgrav_system_results, particle_potential);
  sys.n_particles = 77; /* past the old struct_size: not read */
  const int cellsOld = amrgrav_solve_system(so, &sys, &res);
  int oldBitwise = 0;
  for (int i = 0; i < NC; i++) oldBitwise += pot[i] == pot2[i];

  /* errors */
  setSystem(&sys, &res, qe, 0);
  res.ax = res.ay = res.az = res.probe_ax = res.probe_ay = res.probe_az = NULL;
  res.struct_size = offsetof(amrgrav_system_results, particle_potential);
  const int oldResultsStatus = amrgrav_solve_system(so, &sys, &res);
  char oldResultsMessage[256];
  snprintf(oldResultsMessage, sizeof oldResultsMessage, "%s", amrgrav_last_error(so));
  res.struct_size = sizeof(amrgrav_system_results);
  qm[3] = -1;
  const int negStatus = amrgrav_solve_system(so, &sys, &res);
  char negMessage[256];
  snprintf(negMessage, sizeof negMessage, "%s", amrgrav_last_error(so));
  qm[3] = 0.001;
  sys.particle_softening = NULL;
  sys.softening = 0;
  const int zeroEpsStatus = amrgrav_solve_system(so, &sys, &res);
  char zeroEpsMessage[256];
  snprintf(zeroEpsMessage, sizeof zeroEpsMessage, "%s", amrgrav_last_error(so));
  sys.softening = 0.01;
  sys.particle_mass = NULL;
  const int nullStatus = amrgrav_solve_system(so, &sys, &res);
  amrgrav_destroy(so);
  amrgrav_options bad;
  amrgrav_default_options(&bad);
  bad.softening = 2;
  amrgrav_solver* sb = NULL;
  const int badKernelStatus = amrgrav_create(&bad, &sb);

  printf("{\"ok\":true,\"plummerStatus\":%d,\"plummerErr\":%.3e,\"plummerProbeErr\":%.3e,\"momentumGap\":%.3e,"
         "\"treeStatus\":%d,\"treeErr\":%.3e,\"oldCreate\":%d,\"splineStatus\":%d,\"splineErr\":%.3e,"
         "\"onParticleGap\":%.3e,\"cellsNew\":%d,\"cellsOld\":%d,\"oldBitwise\":%d,\"cells\":%d,"
         "\"oldResultsStatus\":%d,\"oldResultsMessage\":\"%s\",\"negStatus\":%d,\"negMessage\":\"%s\","
         "\"zeroEpsStatus\":%d,\"zeroEpsMessage\":\"%s\",\"nullStatus\":%d,\"badKernelStatus\":%d}\n",
         plummerStatus, plummerErr, plummerProbeErr, momentumGap, treeStatus, treeErr, oldCreate, splineStatus,
         splineErr, onParticleGap, cellsNew, cellsOld, oldBitwise, NC, oldResultsStatus, oldResultsMessage, negStatus,
         negMessage, zeroEpsStatus, zeroEpsMessage, nullStatus, badKernelStatus);
  return 0;
}
