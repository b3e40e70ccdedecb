/// \file ewald_lattice.cpp
/// \brief The Ewald correction tabulated at lattice separations (cpu/ewald_lattice.h).
#include "cpu/ewald_lattice.h"

#include <algorithm>
#include <cmath>

namespace amrgrav {
namespace {

/// Adds 1/r and its derivatives at (x, y, z) != 0 in ewaldLookup's layout (deriv: 0 value, 1 gradient, 2 Hessian
/// xx xy xz yy yz zz, 3 third derivatives xxx xxy xxz xyy xyz xzz yyy yyz yzz zzz).
void addNewton(double x, double y, double z, int deriv, double* c, double* g, double* H, double* T) {
  const double r2 = x * x + y * y + z * z;
  const double ri = 1 / std::sqrt(r2), ri2 = ri * ri, ri3 = ri * ri2, ri5 = ri3 * ri2, ri7 = ri5 * ri2;
  const double s[3] = {x, y, z};
  *c += ri;
  if (deriv >= 1)
    for (int i = 0; i < 3; ++i) g[i] -= s[i] * ri3;
  if (deriv >= 2) {
    static constexpr int hi[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
    for (int e = 0; e < 6; ++e) {
      const int i = hi[e][0], j = hi[e][1];
      H[e] += 3 * s[i] * s[j] * ri5 - (i == j ? ri3 : 0.0);
    }
  }
  if (deriv >= 3) {
    static constexpr int ti[10][3] = {{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {0, 1, 1}, {0, 1, 2},
                                      {0, 2, 2}, {1, 1, 1}, {1, 1, 2}, {1, 2, 2}, {2, 2, 2}};
    for (int e = 0; e < 10; ++e) {
      const int i = ti[e][0], j = ti[e][1], k = ti[e][2];
      const double d = (j == k ? s[i] : 0.0) + (i == k ? s[j] : 0.0) + (i == j ? s[k] : 0.0);
      T[e] += -15 * s[i] * s[j] * s[k] * ri7 + 3 * d * ri5;
    }
  }
}

/// The nearest image of separation d (lattice spacings) along a periodic axis of P spacings: d - P rint(d / P), ties
/// to even as nearestImage gives them.
int nearestSeparation(int d, int P) { return d - P * int(std::rint(double(d) / double(P))); }

/// Per separation s in [-P, P] along periodic axis d of a lattice: the offset of its nearest image's distance (clamped
/// to the lattice's n[d]) in a row table whose axis has `stride`, and (with `sign`) that image's sign.
void foldTables(const EwaldCellLattice& L, int d, int stride, std::vector<std::int32_t>& fold,
                std::vector<double>* sign) {
  const int P = L.period[d];
  fold.resize(std::size_t(2 * P + 1));
  if (sign) sign->resize(std::size_t(2 * P + 1));
  for (int s = -P; s <= P; ++s) {
    const int nd = nearestSeparation(s, P);
    fold[std::size_t(s + P)] = stride * std::min(nd < 0 ? -nd : nd, L.n[d]);
    if (sign) (*sign)[std::size_t(s + P)] = nd < 0 ? -1.0 : 1.0;
  }
}

}  // namespace

EwaldCellLattice makeEwaldCellLattice(const EwaldTableView& v, const SortedCells& cells, bool accel) {
  EwaldCellLattice L;
  const std::size_t m = cells.x.size();
  if (m == 0 || cells.size.size() != m) return L;  // target points (probes) carry no sizes: no lattice
  std::size_t fine = 0;
  for (std::size_t i = 1; i < m; ++i)
    if (cells.size[i] < cells.size[fine]) fine = i;
  L.dx = cells.size[fine];
  if (!(L.dx > 0)) return L;
  L.invDx = 1 / L.dx;
  L.origin[0] = cells.x[fine];
  L.origin[1] = cells.y[fine];
  L.origin[2] = cells.z[fine];
  // the largest separation per axis: half a period (nearest images), else as far as the table reaches (it clamps
  // beyond, as the lattice's index does)
  std::size_t points = 1;
  for (int d = 0; d < 3; ++d) {
    double reach = v.n[d] * v.h[d] / v.invUnit;
    if (v.period[d] > 0) {
      const double k = v.period[d] * L.invDx;
      // images would leave the lattice (as strict as onLatticeAxis: the lattice holds 1/r exactly)
      if (std::fabs(k - std::rint(k)) > kLatticeUlps * 2.220446049250313e-16 * (1 + k)) return L;
      reach = 0.5 * v.period[d];
      L.period[d] = int(std::rint(k));
    }
    L.n[d] = int(std::ceil(reach * L.invDx)) + 1;
    points *= std::size_t(L.n[d] + 1);
    if (points > kEwaldLatticeMaxPoints) return L;
  }
  L.c.resize(points);
  if (accel) { L.gx.resize(points); L.gy.resize(points); L.gz.resize(points); }
  std::size_t idx = 0;
  for (int kz = 0; kz <= L.n[2]; ++kz)
    for (int ky = 0; ky <= L.n[1]; ++ky)
      for (int kx = 0; kx <= L.n[0]; ++kx, ++idx) {
        double c, g[3];
        ewaldLookup<1>(v, kx * L.dx, ky * L.dx, kz * L.dx, &c, g, (double*)nullptr, (double*)nullptr);
        // psi = 1/r + C; at k = 0 a cell meets only its images
        if (kx || ky || kz) addNewton(kx * L.dx, ky * L.dx, kz * L.dx, accel ? 1 : 0, &c, g, nullptr, nullptr);
        L.c[idx] = c;
        if (accel) { L.gx[idx] = g[0]; L.gy[idx] = g[1]; L.gz[idx] = g[2]; }
      }
  if (!accel && L.period[0] > 0) {  // x unfolded: the value at ux is the one at min(ux, P - ux) (clamped as read)
    const int P = L.period[0], s0 = L.n[0] + 1, s1 = L.n[1] + 1;
    L.rowStride = P + kLatticeRun - 1;
    L.rows.resize(std::size_t(L.rowStride) * std::size_t(s1) * std::size_t(L.n[2] + 1));
    for (int kz = 0; kz <= L.n[2]; ++kz)
      for (int ky = 0; ky <= L.n[1]; ++ky)
        for (int ux = 0; ux < L.rowStride; ++ux) {
          const int u = ux % P, kx = std::min(std::min(u, P - u), L.n[0]);
          L.rows[std::size_t(ux) + std::size_t(L.rowStride) * (std::size_t(ky) + std::size_t(s1) * kz)] =
              L.c[std::size_t(kx) + std::size_t(s0) * (std::size_t(ky) + std::size_t(s1) * kz)];
        }
    const int axisStride[3] = {1, L.rowStride, L.rowStride * s1};
    for (int d = 1; d < 3; ++d)
      if (L.period[d] > 0) foldTables(L, d, axisStride[d], L.fold[d], nullptr);
  }
  if (accel && L.period[0] > 0) {  // x as the separation itself (accelRows)
    const int P = L.period[0], s0 = L.n[0] + 1, s1 = L.n[1] + 1;
    L.accelRowStride = 2 * P + kLatticeRun - 1;
    const std::size_t n = std::size_t(L.accelRowStride) * std::size_t(s1) * std::size_t(L.n[2] + 1);
    for (auto& r : L.accelRows) r.resize(n);
    std::size_t o = 0;
    for (int kz = 0; kz <= L.n[2]; ++kz)
      for (int ky = 0; ky <= L.n[1]; ++ky)
        for (int d = -P; d < P + kLatticeRun - 1; ++d, ++o) {
          const int nd = nearestSeparation(d, P), kx = std::min(nd < 0 ? -nd : nd, L.n[0]);
          const std::size_t id = std::size_t(kx) + std::size_t(s0) * (std::size_t(ky) + std::size_t(s1) * kz);
          L.accelRows[0][o] = L.c[id];
          L.accelRows[1][o] = nd < 0 ? -L.gx[id] : L.gx[id];
          L.accelRows[2][o] = L.gy[id];
          L.accelRows[3][o] = L.gz[id];
        }
    const int axisStride[3] = {1, L.accelRowStride, L.accelRowStride * s1};
    for (int d = 1; d < 3; ++d)
      if (L.period[d] > 0) foldTables(L, d, axisStride[d], L.accelFold[d], &L.accelSign[d]);
  }
  L.usable = true;
  return L;
}

EwaldNodeLattice makeEwaldNodeLattice(const EwaldTableView& v, const EwaldCellLattice& cells, bool accel) {
  EwaldNodeLattice L;
  if (!cells.usable) return L;
  L.dx = cells.dx;
  L.invDx = cells.invDx;
  std::size_t points = 1;
  for (int d = 0; d < 3; ++d) {
    L.origin[d] = cells.origin[d] + 0.5 * cells.dx;
    // a node is seen through its image nearest the group, not each cell's: separations up to the table's reach
    const double reach = v.period[d] > 0 ? v.reach[d] : v.n[d] * v.h[d] / v.invUnit;
    L.n[d] = int(std::ceil(reach * L.invDx)) + 1;
    points *= std::size_t(L.n[d] + 1);
    if (points > kEwaldNodeLatticeMaxPoints) return L;
  }
  L.stride = accel ? kEwaldCoefs : 10;
  // with accelerations, 4 zeros past the last point: a point's last coefficients are read as 8
  // (cpu/lattice_eval.h latticeNodeForceRows)
  L.coef.assign(points * L.stride + (accel ? 4 : 0), 0.0);
  double* out = L.coef.data();
  for (int kz = 0; kz <= L.n[2]; ++kz)
    for (int ky = 0; ky <= L.n[1]; ++ky)
      for (int kx = 0; kx <= L.n[0]; ++kx, out += L.stride) {
        const double x = (kx + 0.5) * L.dx, y = (ky + 0.5) * L.dx, z = (kz + 0.5) * L.dx;
        if (accel) ewaldLookup<3>(v, x, y, z, out, out + 1, out + 4, out + 10);
        else ewaldLookup<2>(v, x, y, z, out, out + 1, out + 4, (double*)nullptr);
        addNewton(x, y, z, accel ? 3 : 2, out, out + 1, out + 4, out + 10);  // psi = 1/r + C
      }
  if (!accel) {  // potentials read the split layout only
    L.c8.resize(points);
    L.c2.resize(2 * points);
    for (std::size_t p = 0; p < points; ++p) {
      for (int e = 0; e < 8; ++e) L.c8[p].v[e] = L.coef[10 * p + e];
      L.c2[2 * p] = L.coef[10 * p + 8];
      L.c2[2 * p + 1] = L.coef[10 * p + 9];
    }
    std::vector<double>().swap(L.coef);
  }
  L.usable = true;
  return L;
}

}  // namespace amrgrav
