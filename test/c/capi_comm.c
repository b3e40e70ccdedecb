/* amrgrav_set_communicator under mpirun (issue #19): a hydro code's own communicator instead of MPI_COMM_WORLD.
 * Every rank makes the same cells (one seed); a group of ranks solves a subset of them, each member owning an
 * interleaved share. Three distributed solvers:
 *  - over MPI_COMM_WORLD (no communicator given): all cells, over every rank;
 *  - over a split of the world into two halves (color = rank % 2), through amrgrav_set_communicator: each half solves
 *    its own half of the cells, the other half's mass absent;
 *  - over MPI_COMM_SELF: each rank its own cells alone, no messages.
 * Each is compared with a local (not distributed) solve of the same cells on this rank. Rank 0 prints one JSON
 * object with the largest differences over the ranks; exit status 0 when every check passed. Run with an even
 * number of ranks (4) by test/c-api.test.ts. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amrgrav.h"

enum { N = 6000 };
static double x[N], y[N], z[N], m[N], h[N];

static unsigned long long state = 777;
static double rnd(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (double)(state >> 11) / 9007199254740992.0;
}

/* A group's cells are those with index % groups == group; its member ranks own them in turn, member
 * (index / groups) % count. Gathers the group's cells owned by `mine` (all of the group's when mine < 0), in index
 * order. */
typedef struct Group { int groups, group, count, members[64]; } Group;
static int owner(const Group* g, int i) { return g->members[(i / g->groups) % g->count]; }
static size_t share(const Group* g, int mine, double* sx, double* sy, double* sz, double* sm, double* sh) {
  size_t k = 0;
  for (int i = g->group; i < N; i += g->groups) {
    if (mine >= 0 && owner(g, i) != mine) continue;
    sx[k] = x[i]; sy[k] = y[i]; sz[k] = z[i]; sm[k] = m[i]; sh[k] = h[i];
    ++k;
  }
  return k;
}

/* The largest relative difference between the distributed potential of this rank's cells and a local solve of all
 * the group's cells. */
static double compare(amrgrav_solver* dist, const Group* g, int rank, const amrgrav_options* local, int* status) {
  static double ax[N], ay[N], az[N], am[N], ah[N], ap[N], bx[N], by[N], bz[N], bm[N], bh[N], bp[N];
  const size_t all = share(g, -1, ax, ay, az, am, ah);
  const size_t own = share(g, rank, bx, by, bz, bm, bh);
  *status = amrgrav_compute_potential(dist, own, bx, by, bz, bm, bh, bp, NULL, NULL, NULL);
  if (*status != AMRGRAV_OK) {
    fprintf(stderr, "rank %d: %s\n", rank, amrgrav_last_error(dist));
    return 1;
  }
  amrgrav_solver* s = NULL;
  if (amrgrav_create(local, &s) != AMRGRAV_OK ||
      amrgrav_compute_potential(s, all, ax, ay, az, am, ah, ap, NULL, NULL, NULL) != AMRGRAV_OK) {
    *status = AMRGRAV_INTERNAL;
    return 1;
  }
  amrgrav_destroy(s);
  double d = 0;
  size_t k = 0, a = 0;
  for (int i = g->group; i < N; i += g->groups, ++a) {
    if (owner(g, i) != rank) continue;
    const double e = fabs(bp[k++] - ap[a]) / fabs(ap[a]);
    if (!(e <= d)) d = e;
  }
  return k == own && a == all ? d : 1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int i = 0; i < N; ++i) {
    x[i] = rnd(); y[i] = rnd(); z[i] = rnd();
    m[i] = 0.5 + rnd(); h[i] = 1e-3;
  }
  amrgrav_options o;
  amrgrav_default_options(&o);
  o.G = 1;
  o.theta = 0.5;
  o.backend = AMRGRAV_BACKEND_CPU;
  o.threads = 1;
  amrgrav_options local = o;
  o.distributed = 1;

  /* the world, as before: no communicator given */
  Group world = {1, 0, size, {0}}, half = {2, rank % 2, 0, {0}}, self = {size, rank, 1, {rank}};
  for (int r = 0; r < size && r < 64; ++r) world.members[r] = r;
  for (int r = rank % 2; r < size && half.count < 64; r += 2) half.members[half.count++] = r;
  amrgrav_solver* sw = NULL;
  int ok = size <= 64 && amrgrav_create(&o, &sw) == AMRGRAV_OK;
  int stWorld = -1, stHalf = -1, stSelf = -1;
  double dWorld = ok ? compare(sw, &world, rank, &local, &stWorld) : 1;
  amrgrav_destroy(sw);

  /* half of the world, by its Fortran handle */
  MPI_Comm halves;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &halves);
  amrgrav_solver* sh = NULL;
  ok = ok && amrgrav_create(&o, &sh) == AMRGRAV_OK;
  const amrgrav_status setHalf = amrgrav_set_communicator(sh, (int)MPI_Comm_c2f(halves));
  double dHalf = setHalf == AMRGRAV_OK ? compare(sh, &half, rank, &local, &stHalf) : 1;
  amrgrav_destroy(sh);
  MPI_Comm_free(&halves);

  /* one rank: no collective, this rank's cells alone */
  amrgrav_solver* ss = NULL;
  ok = ok && amrgrav_create(&o, &ss) == AMRGRAV_OK;
  const amrgrav_status setSelf = amrgrav_set_communicator(ss, (int)MPI_Comm_c2f(MPI_COMM_SELF));
  double dSelf = setSelf == AMRGRAV_OK ? compare(ss, &self, rank, &local, &stSelf) : 1;
  amrgrav_destroy(ss);

  /* a null communicator is refused */
  amrgrav_solver* sn = NULL;
  amrgrav_create(&o, &sn);
  const amrgrav_status setNull = amrgrav_set_communicator(sn, (int)MPI_Comm_c2f(MPI_COMM_NULL));
  amrgrav_destroy(sn);

  double worst[3] = {dWorld, dHalf, dSelf}, most[3];
  MPI_Reduce(worst, most, 3, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  int mine = ok && stWorld == 0 && stHalf == 0 && stSelf == 0 && setHalf == 0 && setSelf == 0 &&
             setNull == AMRGRAV_INVALID_INPUT, all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    /* tolerances: the distributed walk differs from one process's by the tree's error at theta 0.5 at most; the
     * self communicator runs the local solve itself */
    all = all && most[0] < 1e-3 && most[1] < 1e-3 && most[2] == 0;
    printf("{\"ranks\":%d,\"world\":%.3e,\"halves\":%.3e,\"self\":%.3e,\"nullCommunicator\":%d,\"ok\":%s}\n", size,
           most[0], most[1], most[2], setNull, all ? "true" : "false");
  }
  MPI_Bcast(&all, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return all ? 0 : 1;
}
