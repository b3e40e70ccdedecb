/// \file ewald_lattice.cpp
/// \brief The Ewald correction tabulated at lattice separations (cpu/ewald_lattice.h).
#include "cpu/ewald_lattice.h"


namespace amrgrav {

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
      if (std::fabs(k - std::rint(k)) > 1e-9 * k) return L;  // images would leave the lattice
      reach = 0.5 * v.period[d];
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
        L.c[idx] = c;
        if (accel) { L.gx[idx] = g[0]; L.gy[idx] = g[1]; L.gz[idx] = g[2]; }
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
  L.coef.resize(points * L.stride);
  double* out = L.coef.data();
  for (int kz = 0; kz <= L.n[2]; ++kz)
    for (int ky = 0; ky <= L.n[1]; ++ky)
      for (int kx = 0; kx <= L.n[0]; ++kx, out += L.stride) {
        const double x = (kx + 0.5) * L.dx, y = (ky + 0.5) * L.dx, z = (kz + 0.5) * L.dx;
        if (accel) ewaldLookup<3>(v, x, y, z, out, out + 1, out + 4, out + 10);
        else ewaldLookup<2>(v, x, y, z, out, out + 1, out + 4, (double*)nullptr);
      }
  L.usable = true;
  return L;
}

}  // namespace amrgrav
