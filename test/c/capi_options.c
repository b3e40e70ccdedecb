/* The C API's additions of issue #19, as a C caller sees them: amrgrav_version, amrgrav_get_build_info (also with an
 * older caller's smaller struct), the options ewald_expansion and walk (and an older caller's amrgrav_options without
 * them), the periodic box's shape refused at amrgrav_create, threads = 0 following OMP_NUM_THREADS, the warning when
 * the Ewald table cannot be cached, and amrgrav_set_communicator on a solver that is not distributed. Prints one JSON
 * object; exit status 0 when every check passed. Built and run by test/c-api.test.ts. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amrgrav.h"

static unsigned long long state = 4242;
static double rnd(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(state >> 11) / 9007199254740992.0;
}

enum { N = 4000 };
static double x[N], y[N], z[N], m[N], h[N];

/* one solve with these options: status, the potential into pot, interactions per cell into *ipc, warning copied */
static amrgrav_status solve(const amrgrav_options* o, double* pot, double* ipc, char* warning, size_t wlen) {
  amrgrav_solver* s = NULL;
  amrgrav_status st = amrgrav_create(o, &s);
  if (st != AMRGRAV_OK) return st;
  st = amrgrav_compute_potential(s, N, x, y, z, m, h, pot, NULL, NULL, NULL);
  if (warning) snprintf(warning, wlen, "%s", amrgrav_last_warning(s));
  amrgrav_stats stats;
  amrgrav_get_stats(s, &stats);
  if (ipc) *ipc = stats.interactions_per_cell;
  amrgrav_destroy(s);
  return st;
}

static double maxRelDiff(const double* a, const double* b) {
  double d = 0, scale = 0;
  for (int i = 0; i < N; ++i) {
    if (fabs(b[i]) > scale) scale = fabs(b[i]);
    if (!(fabs(a[i] - b[i]) <= d)) d = fabs(a[i] - b[i]);
  }
  return d / scale;
}

/* a string for JSON: quotes and backslashes dropped (the messages here have none that matter) */
static const char* j(char* s) {
  for (char* p = s; *p; ++p)
    if (*p == '"' || *p == '\\' || *p == '\n') *p = ' ';
  return s;
}

int main(void) {
  static double p0[N], p1[N], p2[N];
  const double hc = 1.0 / 32;
  for (int i = 0; i < N; ++i) { /* distinct centres of a 32^3 lattice, random masses */
    const int c = (int)(rnd() * 32768) % 32768;
    x[i] = ((c % 32) + 0.5) * hc; y[i] = ((c / 32 % 32) + 0.5) * hc; z[i] = ((c / 1024) + 0.5) * hc;
    m[i] = 0.5 + rnd(); h[i] = hc;
  }
  /* drop duplicate centres by moving them to free lattice points, in a fixed order */
  {
    static char used[32768];
    for (int i = 0; i < N; ++i) {
      int c = (int)floor(x[i] / hc) + 32 * (int)floor(y[i] / hc) + 1024 * (int)floor(z[i] / hc);
      while (used[c]) c = (c + 7919) % 32768;
      used[c] = 1;
      x[i] = ((c % 32) + 0.5) * hc; y[i] = ((c / 32 % 32) + 0.5) * hc; z[i] = ((c / 1024) + 0.5) * hc;
    }
  }
  int ok = 1;

  /* version and build */
  const char* version = amrgrav_version();
  amrgrav_build_info info;
  memset(&info, 0, sizeof info);
  info.struct_size = sizeof info;
  const amrgrav_status infoSt = amrgrav_get_build_info(&info);
  /* an older caller whose struct ends before default_threads: that field is left alone */
  amrgrav_build_info small;
  memset(&small, 0, sizeof small);
  small.default_threads = -7;
  small.struct_size = offsetof(amrgrav_build_info, default_threads);
  amrgrav_get_build_info(&small);
  const int smallUntouched = small.default_threads == -7 && small.mpi_built == info.mpi_built;
  const amrgrav_status infoNull = amrgrav_get_build_info(NULL);

  /* threads = 0 follows OMP_NUM_THREADS (read at create; build_info says what it resolves to) */
  setenv("OMP_NUM_THREADS", "3,1", 1);
  amrgrav_get_build_info(&info);
  const int threadsFromOmp = info.default_threads;
  setenv("OMP_NUM_THREADS", "many", 1);
  amrgrav_options d;
  amrgrav_default_options(&d);
  d.G = 1;
  amrgrav_solver* ws = NULL;
  const amrgrav_status ompBadCreate = amrgrav_create(&d, &ws);
  char ompWarning[512], ompWarningSolver[512];
  snprintf(ompWarning, sizeof ompWarning, "%s", amrgrav_last_warning(NULL));
  snprintf(ompWarningSolver, sizeof ompWarningSolver, "%s", ws ? amrgrav_last_warning(ws) : "");
  amrgrav_destroy(ws);
  unsetenv("OMP_NUM_THREADS");
  amrgrav_get_build_info(&info);
  const int threadsDefault = info.default_threads;

  /* defaults: walk box, ewald_expansion 1; an older caller (struct_size without the two fields) gets the same */
  const int defaultWalk = d.walk, defaultExpansion = d.ewald_expansion;
  double ipcBox = 0, ipcVote = 0;
  ok = ok && solve(&d, p0, &ipcBox, NULL, 0) == AMRGRAV_OK;
  amrgrav_options old = d;
  old.struct_size = offsetof(amrgrav_options, ewald_expansion);
  old.walk = 12345; /* beyond the caller's struct: never read */
  old.ewald_expansion = -1;
  const amrgrav_status oldSt = solve(&old, p1, NULL, NULL, 0);
  const int oldSame = oldSt == AMRGRAV_OK && memcmp(p0, p1, sizeof p0) == 0;

  /* walk = 1 (vote): fewer interactions, the potential within the tree's error of the box walk's */
  amrgrav_options v = d;
  v.walk = 1;
  ok = ok && solve(&v, p1, &ipcVote, NULL, 0) == AMRGRAV_OK;
  const double voteVsBox = maxRelDiff(p1, p0);
  v.walk = 2;
  amrgrav_solver* bad = NULL;
  const amrgrav_status badWalk = amrgrav_create(&v, &bad);
  char badWalkMsg[256];
  snprintf(badWalkMsg, sizeof badWalkMsg, "%s", amrgrav_last_error(NULL));

  /* periodic: the first solve of a box shape builds the Ewald table; with a cache directory that cannot be made, a
   * warning says so (once: the next solve finds the table in memory). ewald_expansion 0 takes per-pair lookups. */
  for (int i = 0; i < N; ++i) { /* a cluster 1/16 of the box wide: groups smaller than a table spacing */
    x[i] /= 16; y[i] /= 16; z[i] /= 16; h[i] /= 16;
  }
  setenv("AMRGRAV_CACHE_DIR", "/dev/null/amrgrav-cache", 1);
  amrgrav_options p = d;
  p.has_box = 1;
  for (int k = 0; k < 3; ++k) { p.box_lo[k] = 0; p.box_hi[k] = 1; p.periodic[k] = 1; }
  char warn1[1024] = "", warn2[1024] = "";
  ok = ok && solve(&p, p0, NULL, warn1, sizeof warn1) == AMRGRAV_OK;
  ok = ok && solve(&p, p1, NULL, warn2, sizeof warn2) == AMRGRAV_OK;
  p.ewald_expansion = 0;
  ok = ok && solve(&p, p2, NULL, NULL, 0) == AMRGRAV_OK;
  const double expansionVsPairs = maxRelDiff(p0, p2);
  unsetenv("AMRGRAV_CACHE_DIR");

  /* the box's shape is refused at create (it was at the first computation) */
  amrgrav_options a = p;
  a.ewald_expansion = 1;
  a.periodic[2] = 0;
  a.box_hi[2] = 32; /* aspect ratio 32 > 16 */
  const amrgrav_status aspect = amrgrav_create(&a, &bad);
  char aspectMsg[256];
  snprintf(aspectMsg, sizeof aspectMsg, "%s", amrgrav_last_error(NULL));
  a.box_hi[2] = 16;
  a.ewald_resolution = 512; /* a table of too many points */
  const amrgrav_status tooFine = amrgrav_create(&a, &bad);
  char tooFineMsg[256];
  snprintf(tooFineMsg, sizeof tooFineMsg, "%s", amrgrav_last_error(NULL));

  /* a communicator is for distributed solvers */
  amrgrav_solver* ls = NULL;
  amrgrav_create(&d, &ls);
  const amrgrav_status commNotDistributed = amrgrav_set_communicator(ls, 0);
  char commMsg[256];
  snprintf(commMsg, sizeof commMsg, "%s", amrgrav_last_error(ls));
  amrgrav_destroy(ls);
  const amrgrav_status commNull = amrgrav_set_communicator(NULL, 0);

  ok = ok && infoSt == AMRGRAV_OK && smallUntouched && infoNull == AMRGRAV_INVALID_INPUT && threadsFromOmp == 3 &&
       ompBadCreate == AMRGRAV_OK && strstr(ompWarning, "OMP_NUM_THREADS") && strcmp(ompWarning, ompWarningSolver) == 0 &&
       threadsDefault >= 1 && defaultWalk == 0 && defaultExpansion == 1 && oldSame && ipcVote < ipcBox &&
       voteVsBox < 1e-3 && badWalk == AMRGRAV_INVALID_OPTION && strstr(warn1, "could not be cached") &&
       warn2[0] == 0 && expansionVsPairs > 0 && expansionVsPairs < 1e-4 && aspect == AMRGRAV_INVALID_OPTION &&
       tooFine == AMRGRAV_INVALID_OPTION && bad == NULL && commNotDistributed == AMRGRAV_INVALID_OPTION &&
       commNull == AMRGRAV_INVALID_INPUT;
  printf("{\"version\":\"%s\",\"cudaBuilt\":%d,\"cudaDevices\":%d,\"cudaUsable\":%d,\"mpiBuilt\":%d,\"features\":%d,"
         "\"smallUntouched\":%d,\"infoNull\":%d,\"threadsFromOmp\":%d,\"threadsDefault\":%d,\"ompBadCreate\":%d,"
         "\"ompWarning\":\"%s\",\"defaultWalk\":%d,\"defaultExpansion\":%d,\"oldStructSame\":%d,"
         "\"interactionsBox\":%.1f,\"interactionsVote\":%.1f,\"voteVsBox\":%.3e,\"badWalk\":%d,\"badWalkMessage\":\"%s\","
         "\"cacheWarning\":\"%s\",\"cacheWarningAgain\":\"%s\",\"expansionVsPairs\":%.3e,\"aspect\":%d,"
         "\"aspectMessage\":\"%s\",\"tooFine\":%d,\"tooFineMessage\":\"%s\",\"commNotDistributed\":%d,"
         "\"commMessage\":\"%s\",\"commNull\":%d,\"ok\":%s}\n",
         version, info.cuda_built, info.cuda_devices, info.cuda_usable, info.mpi_built, amrgrav_features(),
         smallUntouched, infoNull, threadsFromOmp, threadsDefault, ompBadCreate, j(ompWarning), defaultWalk,
         defaultExpansion, oldSame, ipcBox, ipcVote, voteVsBox, badWalk, j(badWalkMsg), j(warn1), j(warn2),
         expansionVsPairs, aspect, j(aspectMsg), tooFine, j(tooFineMsg), commNotDistributed, j(commMsg), commNull,
         ok ? "true" : "false");
  return ok ? 0 : 1;
}
