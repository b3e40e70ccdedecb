/// \file evaluate.cpp
/// \brief The FMM's evaluation (see evaluate.h). Built with contraction (as cpu/cpu_walk.cpp): these loops evaluate
/// the lists and decide nothing. The hot loops are compiled for AVX-512, AVX2 and the baseline and picked at load
/// time; lanes are always 8 doubles (fmm/simd.h).
#include "fmm/evaluate.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"
#include "fmm/multi_index.h"
#include "fmm/p2p_tables.h"
#include "fmm/simd.h"
#include "fmm/terms_k.h"
#include "fmm/m2l_kernels.h"

namespace amrgrav {
namespace fmm {
namespace {

// ------------------------------------------------------------------------------------------------------------------
// M2L: one target node per task, its sources kLanes at a time in lanes; lanes summed in lane order at the end. The
// tree's lists in the harmonic form (m2l_kernels.h: the sources' multipoles folded onto their (p+1)^2 terms with
// c <= 1 once per node, the derivatives with c <= 2, the target's terms unfolded once): about half the products and
// half the derivatives' work of the full Cartesian kernel, which the far images keep (their periodic kernel is not
// harmonic at order 2).

/// The full kernel with the dipole terms (the far images': m2lWithKernelsT).
template <int P, class T> AG_FMM_INLINE void m2lOneDipFor(const T* D, const T* Mb, T* La) {
  if constexpr (P == 3) m2lOne3(D, Mb, La);
  else if constexpr (P == 4) m2lOne4(D, Mb, La);
  else if constexpr (P == 5) m2lOne5(D, Mb, La);
  else if constexpr (P == 6) m2lOne6(D, Mb, La);
  else m2lOne7(D, Mb, La);
}
/// The harmonic kernels of order P (m2l_kernels.h). Multipoles about centres of mass have no dipole (isolated boxes:
/// no negative masses; a massless node's multipoles are all 0), so the dipole terms are left out; about geometric
/// centres (periodic boxes: signed masses, fmm_tree.h) they are kept (Dip).
template <int P, class T> AG_FMM_INLINE void derivativesHFor(T x, T y, T z, T* D) {
  if constexpr (P == 3) derivativesH3(x, y, z, D);
  else if constexpr (P == 4) derivativesH4(x, y, z, D);
  else if constexpr (P == 5) derivativesH5(x, y, z, D);
  else if constexpr (P == 6) derivativesH6(x, y, z, D);
  else derivativesH7(x, y, z, D);
}
template <int P, bool Dip, class T> AG_FMM_INLINE void m2lOneHFor(const T* D, const T* Mh, T* Lh) {
  if constexpr (Dip) {
    if constexpr (P == 3) m2lOneH3(D, Mh, Lh);
    else if constexpr (P == 4) m2lOneH4(D, Mh, Lh);
    else if constexpr (P == 5) m2lOneH5(D, Mh, Lh);
    else if constexpr (P == 6) m2lOneH6(D, Mh, Lh);
    else m2lOneH7(D, Mh, Lh);
  } else {
    if constexpr (P == 3) m2lOneH3nd(D, Mh, Lh);
    else if constexpr (P == 4) m2lOneH4nd(D, Mh, Lh);
    else if constexpr (P == 5) m2lOneH5nd(D, Mh, Lh);
    else if constexpr (P == 6) m2lOneH6nd(D, Mh, Lh);
    else m2lOneH7nd(D, Mh, Lh);
  }
}
template <int P> AG_FMM_INLINE void foldMultipolesFor(const double* M, double* Mh) {
  if constexpr (P == 3) foldMultipoles3(M, Mh);
  else if constexpr (P == 4) foldMultipoles4(M, Mh);
  else if constexpr (P == 5) foldMultipoles5(M, Mh);
  else if constexpr (P == 6) foldMultipoles6(M, Mh);
  else foldMultipoles7(M, Mh);
}
template <int P> AG_FMM_INLINE void addUnfoldedLocalFor(const double* Lh, double* L) {
  if constexpr (P == 3) addUnfoldedLocal3(Lh, L);
  else if constexpr (P == 4) addUnfoldedLocal4(Lh, L);
  else if constexpr (P == 5) addUnfoldedLocal5(Lh, L);
  else if constexpr (P == 6) addUnfoldedLocal6(Lh, L);
  else addUnfoldedLocal7(Lh, L);
}

/// Nodes [b, e)'s multipoles (stride mStride) folded onto their harmonic terms (m2l_kernels.h foldMultipoles).
template <int P>
void foldNodes(const double* M, std::size_t mStride, double* Mh, std::size_t b, std::size_t e) {
  constexpr int HS = harmonicStrideOf(P);
  for (std::size_t A = b; A < e; ++A) {
    double* h = Mh + A * HS;
    foldMultipolesFor<P>(M + A * mStride, h);
    for (int k = harmonicTermsOf(P); k < HS; ++k) h[k] = 0;
  }
}

/// M2L into the L of targets [b, e) of `tgt` from the sources of the CSR list (start, source, shift), the sources'
/// folded multipoles (harmonic layout, foldNodes) and centres in `srcMh` and `srcC` (the tree's own, or a received
/// LET's: fmm_let.h). The harmonic kernels (m2l_kernels.h): the target's harmonic terms summed over its sources in
/// lanes, then unfolded into L once.
template <int P, bool Dip>
AG_FMM_INLINE void m2lTargets(const std::uint32_t* start, const std::uint32_t* source, const std::uint8_t* shift,
                              const FmmLists& geo, const double* srcMh, const double* srcC, FmmTree& t, std::size_t b,
                              std::size_t e) {
  constexpr int NT = termCount(P), NH = harmonicTermsOf(P), HS = harmonicStrideOf(P), NB = HS / 8;
  const double* c = t.centre.data();
  const double* sc = srcC;
  for (std::size_t A = b; A < e; ++A) {
    const std::uint32_t s0 = start[A], s1 = start[A + 1];
    if (s0 == s1) continue;
    Vd Lh[NH];
    for (int k = 0; k < NH; ++k) Lh[k] = Vd{};
    for (std::uint32_t q = s0; q < s1; q += kLanes) {
      Vd rx{}, ry{}, rz{}, Mb[HS];
      const double* src[kLanes];
      for (int lane = 0; lane < kLanes; ++lane) {
        if (q + lane < s1) {
          const std::uint32_t B = source[q + lane];
          double v[3];
          geo.shiftVector(shift[q + lane], v);  // zeros without a shift: c + 0, the same bits
          rx[lane] = c[3 * A] - (sc[3 * B] + v[0]);
          ry[lane] = c[3 * A + 1] - (sc[3 * B + 1] + v[1]);
          rz[lane] = c[3 * A + 2] - (sc[3 * B + 2] + v[2]);
          src[lane] = &srcMh[std::size_t(B) * HS];
        } else {  // an empty lane: a massless source at unit distance
          rx[lane] = 1;
          ry[lane] = 0;
          rz[lane] = 0;
          src[lane] = nullptr;
        }
      }
      // the sources' folded multipoles into lanes, eight terms at a time
      for (int blk = 0; blk < NB; ++blk) {
        Vd rows[kLanes];
        for (int lane = 0; lane < kLanes; ++lane) {
          if (src[lane]) std::memcpy(&rows[lane], src[lane] + 8 * blk, sizeof(Vd));
          else rows[lane] = Vd{};
        }
        transpose8(rows, &Mb[8 * blk]);
      }
      Vd D[NT];
      derivativesHFor<P>(rx, ry, rz, D);
      m2lOneHFor<P, Dip>(D, Mb, Lh);
    }
    double lh[NH];
    for (int k = 0; k < NH; ++k) lh[k] = hsum(Lh[k]);
    addUnfoldedLocalFor<P>(lh, &t.L[A * NT]);
  }
}

/// The far images' M2L into one target (far_images.cpp): its sources' kernel derivatives D[q] and multipoles M[q]
/// (each padded with zeros to a multiple of 8 terms), sources in lanes, lanes summed in lane order at the end.
template <int P>
AG_FMM_INLINE void m2lWithKernelsT(std::size_t count, const double* const* D, const double* const* M, double* L) {
  constexpr int NT = termCount(P), NB = (NT + 7) / 8;
  Vd La[NT];
  for (int k = 0; k < NT; ++k) La[k] = Vd{};
  for (std::size_t q = 0; q < count; q += kLanes) {
    Vd Db[NB * 8], Mb[NB * 8];
    for (int blk = 0; blk < NB; ++blk) {
      Vd rd[kLanes], rm[kLanes];
      for (int lane = 0; lane < kLanes; ++lane) {
        if (q + lane < count) {
          std::memcpy(&rd[lane], D[q + lane] + 8 * blk, sizeof(Vd));
          std::memcpy(&rm[lane], M[q + lane] + 8 * blk, sizeof(Vd));
        } else {  // an empty lane: no source
          rd[lane] = Vd{};
          rm[lane] = Vd{};
        }
      }
      transpose8(rd, &Db[8 * blk]);
      transpose8(rm, &Mb[8 * blk]);
    }
    m2lOneDipFor<P>(Db, Mb, La);
  }
  for (int k = 0; k < NT; ++k) L[k] += hsum(La[k]);
}

#define AG_M2L(P)                                                                                          \
  AG_FMM_CLONES void m2lTargets##P(const std::uint32_t* st, const std::uint32_t* so, const std::uint8_t* sh,     \
                                   const FmmLists& g, const double* M, const double* C, FmmTree& t,             \
                                   std::size_t b, std::size_t e) {                                              \
    m2lTargets<P, false>(st, so, sh, g, M, C, t, b, e);                                                        \
  }                                                                                                        \
  AG_FMM_CLONES void m2lTargetsDip##P(const std::uint32_t* st, const std::uint32_t* so, const std::uint8_t* sh,  \
                                      const FmmLists& g, const double* M, const double* C, FmmTree& t,          \
                                      std::size_t b, std::size_t e) {                                           \
    m2lTargets<P, true>(st, so, sh, g, M, C, t, b, e);                                                         \
  }
#define AG_M2LK(P)                                                                                         \
  AG_FMM_CLONES void m2lWithKernels##P(std::size_t n, const double* const* D, const double* const* M, double* L) { \
    m2lWithKernelsT<P>(n, D, M, L);                                                                        \
  }
AG_M2LK(3)
AG_M2LK(4)
AG_M2LK(5)
AG_M2LK(6)
AG_M2LK(7)
#undef AG_M2LK
AG_M2L(3)
AG_M2L(4)
AG_M2L(5)
AG_M2L(6)
AG_M2L(7)
#undef AG_M2L

// ------------------------------------------------------------------------------------------------------------------
// P2P. The source leaf's cells in lanes (padding: massless, far away), the target's one at a time. A distinct pair
// is mutual: one 1/r per cell pair serves both sides.

/// Cells of one source block in lanes: up to kBlock cells.
constexpr int kBlockVecs = 8, kBlock = kBlockVecs * kLanes;

struct Lanes {
  Vd x[kBlockVecs], y[kBlockVecs], z[kBlockVecs], m[kBlockVecs];
  int vecs = 0;
  /// shift: the image shift's vector added to the positions (zeros: the same bits).
  AG_FMM_INLINE void load(const SortedCells& c, std::uint32_t b, std::uint32_t e, const double* shift) {
    vecs = int((e - b + kLanes - 1) / kLanes);
    for (int v = 0; v < vecs; ++v)
      for (int lane = 0; lane < kLanes; ++lane) {
        const std::uint32_t j = b + std::uint32_t(v * kLanes + lane);
        const bool in = j < e;
        x[v][lane] = in ? c.x[j] + shift[0] : 1e30;
        y[v][lane] = in ? c.y[j] + shift[1] : 1e30;
        z[v][lane] = in ? c.z[j] + shift[2] : 1e30;
        m[v][lane] = in ? c.mass[j] : 0.0;
      }
  }
  /// The same from plain arrays (a received LET's cells).
  AG_FMM_INLINE void load(const double* px, const double* py, const double* pz, const double* pm, std::uint32_t b,
                          std::uint32_t e, const double* shift) {
    vecs = int((e - b + kLanes - 1) / kLanes);
    for (int v = 0; v < vecs; ++v)
      for (int lane = 0; lane < kLanes; ++lane) {
        const std::uint32_t j = b + std::uint32_t(v * kLanes + lane);
        const bool in = j < e;
        x[v][lane] = in ? px[j] + shift[0] : 1e30;
        y[v][lane] = in ? py[j] + shift[1] : 1e30;
        z[v][lane] = in ? pz[j] + shift[2] : 1e30;
        m[v][lane] = in ? pm[j] : 0.0;
      }
  }
};

/// Cells [ab, ae) of the target against the block `s` (its cells [sb, se)): the target's sums into pa..gza
/// (overwritten), and, when Mutual, the source cells' sums from the target's cells into ps..gzs (overwritten). Same:
/// the block is the targets' own (a cell's pair with itself masked), not mutual.
template <bool Accel, bool Mutual, bool Same>
AG_FMM_INLINE void p2pBlock(const SortedCells& c, std::uint32_t ab, std::uint32_t ae, const Lanes& s,
                            std::uint32_t sb, std::uint32_t se, double* pa, double* gxa, double* gya, double* gza,
                            double* ps, double* gxs, double* gys, double* gzs) {
  Vd bp[kBlockVecs], bgx[kBlockVecs], bgy[kBlockVecs], bgz[kBlockVecs];
  for (int v = 0; v < s.vecs; ++v) bp[v] = bgx[v] = bgy[v] = bgz[v] = Vd{};
  for (std::uint32_t i = ab; i < ae; ++i) {
    const double xi = c.x[i], yi = c.y[i], zi = c.z[i], mi = c.mass[i];
    Vd p{}, fx{}, fy{}, fz{};
    for (int v = 0; v < s.vecs; ++v) {
      const Vd dx = xi - s.x[v], dy = yi - s.y[v], dz = zi - s.z[v];
      const Vd r2 = dx * dx + dy * dy + dz * dz;
      Vd rinv;
      if constexpr (Same) rinv = r2 > 0.0 ? vrsqrt(r2 > 0.0 ? r2 : Vd{} + 1.0) : Vd{};
      else rinv = vrsqrt(r2);
      p += s.m[v] * rinv;
      if constexpr (Accel) {
        const Vd r3 = rinv * rinv * rinv, t = s.m[v] * r3;
        fx += t * dx;
        fy += t * dy;
        fz += t * dz;
        if constexpr (Mutual) {
          const Vd u = mi * r3;
          bgx[v] -= u * dx;
          bgy[v] -= u * dy;
          bgz[v] -= u * dz;
        }
      }
      if constexpr (Mutual) bp[v] += mi * rinv;
    }
    pa[i - ab] = hsum(p);
    if constexpr (Accel) {
      gxa[i - ab] = hsum(fx);
      gya[i - ab] = hsum(fy);
      gza[i - ab] = hsum(fz);
    }
  }
  if constexpr (!Mutual) return;
  for (std::uint32_t j = sb; j < se; ++j) {
    const int v = int((j - sb) / kLanes), lane = int((j - sb) % kLanes);
    ps[j - sb] = bp[v][lane];
    if constexpr (Accel) {
      gxs[j - sb] = bgx[v][lane];
      gys[j - sb] = bgy[v][lane];
      gzs[j - sb] = bgz[v][lane];
    }
  }
}

/// A leaf with itself, into out (overwritten): its cells against its source blocks in order.
template <bool Accel>
AG_FMM_INLINE void p2pSelfT(const SortedCells& c, std::uint32_t b, std::uint32_t e, FmmOutput out) {
  double p[kBlock], gx[kBlock], gy[kBlock], gz[kBlock];
  Lanes s;
  const double none[3] = {0, 0, 0};
  for (std::uint32_t ab = b; ab < e; ab += kBlock) {
    const std::uint32_t ae = std::min(e, ab + kBlock);
    for (std::uint32_t i = ab; i < ae; ++i) {
      out.phi[i] = 0;
      if (Accel) out.gx[i] = out.gy[i] = out.gz[i] = 0;
    }
    for (std::uint32_t sb = b; sb < e; sb += kBlock) {
      const std::uint32_t se = std::min(e, sb + kBlock);
      s.load(c, sb, se, none);
      p2pBlock<Accel, false, true>(c, ab, ae, s, sb, se, p, gx, gy, gz, nullptr, nullptr, nullptr, nullptr);
      for (std::uint32_t i = ab; i < ae; ++i) {
        out.phi[i] += p[i - ab];
        if (Accel) { out.gx[i] += gx[i - ab]; out.gy[i] += gy[i - ab]; out.gz[i] += gz[i - ab]; }
      }
    }
  }
}

/// A distinct pair (B moved by `shift`: an image) into the chunk buffers at `at` (A's cells, then B's), overwritten.
template <bool Accel>
AG_FMM_INLINE void p2pPairT(const SortedCells& c, std::uint32_t a0, std::uint32_t a1, std::uint32_t b0,
                            std::uint32_t b1, const double* shift, double* p, double* gx, double* gy, double* gz) {
  const std::uint32_t na = a1 - a0;
  double tp[kBlock], tx[kBlock], ty[kBlock], tz[kBlock], sp[kBlock], sx[kBlock], sy[kBlock], sz[kBlock];
  for (std::uint32_t i = 0; i < (a1 - a0) + (b1 - b0); ++i) {
    p[i] = 0;
    if (Accel) gx[i] = gy[i] = gz[i] = 0;
  }
  Lanes s;
  for (std::uint32_t sb = b0; sb < b1; sb += kBlock) {
    const std::uint32_t se = std::min(b1, sb + kBlock);
    s.load(c, sb, se, shift);
    for (std::uint32_t ab = a0; ab < a1; ab += kBlock) {
      const std::uint32_t ae = std::min(a1, ab + kBlock);
      p2pBlock<Accel, true, false>(c, ab, ae, s, sb, se, tp, tx, ty, tz, sp, sx, sy, sz);
      for (std::uint32_t i = ab; i < ae; ++i) {
        p[i - a0] += tp[i - ab];
        if (Accel) { gx[i - a0] += tx[i - ab]; gy[i - a0] += ty[i - ab]; gz[i - a0] += tz[i - ab]; }
      }
      for (std::uint32_t j = sb; j < se; ++j) {
        const std::uint32_t k = na + (j - b0);
        p[k] += sp[j - sb];
        if (Accel) { gx[k] += sx[j - sb]; gy[k] += sy[j - sb]; gz[k] += sz[j - sb]; }
      }
    }
  }
}

AG_FMM_CLONES void p2pSelfPot(const SortedCells& c, std::uint32_t b, std::uint32_t e, FmmOutput out) {
  p2pSelfT<false>(c, b, e, out);
}
AG_FMM_CLONES void p2pSelfForce(const SortedCells& c, std::uint32_t b, std::uint32_t e, FmmOutput out) {
  p2pSelfT<true>(c, b, e, out);
}
AG_FMM_CLONES void p2pPairPot(const SortedCells& c, std::uint32_t a0, std::uint32_t a1, std::uint32_t b0,
                              std::uint32_t b1, const double* shift, double* p, double* gx, double* gy, double* gz) {
  p2pPairT<false>(c, a0, a1, b0, b1, shift, p, gx, gy, gz);
}
AG_FMM_CLONES void p2pPairForce(const SortedCells& c, std::uint32_t a0, std::uint32_t a1, std::uint32_t b0,
                                std::uint32_t b1, const double* shift, double* p, double* gx, double* gy, double* gz) {
  p2pPairT<true>(c, a0, a1, b0, b1, shift, p, gx, gy, gz);
}

/// One-sided: cells [ab, ae) of the target from the block `s` (a received LET's cells), overwritten into p..gz.
AG_FMM_CLONES void p2pOneSidedPot(const SortedCells& c, std::uint32_t ab, std::uint32_t ae, const Lanes& s, double* p,
                                  double* gx, double* gy, double* gz) {
  p2pBlock<false, false, false>(c, ab, ae, s, 0, 0, p, gx, gy, gz, nullptr, nullptr, nullptr, nullptr);
}
AG_FMM_CLONES void p2pOneSidedForce(const SortedCells& c, std::uint32_t ab, std::uint32_t ae, const Lanes& s, double* p,
                                    double* gx, double* gy, double* gz) {
  p2pBlock<true, false, false>(c, ab, ae, s, 0, 0, p, gx, gy, gz, nullptr, nullptr, nullptr, nullptr);
}

/// Cells in one chunk's buffers: the chunks are cut by this count alone (never by the thread count), so the order in
/// which a cell's pair sums are added is the list's.
constexpr std::uint32_t kChunkCells = 1u << 17;

}  // namespace

namespace {
using M2lFn = void (*)(const std::uint32_t*, const std::uint32_t*, const std::uint8_t*, const FmmLists&, const double*,
                       const double*, FmmTree&, std::size_t, std::size_t);
M2lFn m2lFor(const FmmTree& tree) {
  static constexpr M2lFn fns[5] = {m2lTargets3, m2lTargets4, m2lTargets5, m2lTargets6, m2lTargets7};
  static constexpr M2lFn dip[5] = {m2lTargetsDip3, m2lTargetsDip4, m2lTargetsDip5, m2lTargetsDip6, m2lTargetsDip7};
  return (tree.dipoles ? dip : fns)[tree.order - 3];
}
}  // namespace

/// Multipoles (stride mStride) of nodes [0, count) folded onto their harmonic terms, for the M2L's sources.
static std::vector<double> foldedMultipoles(int order, const double* M, std::size_t mStride, std::size_t count,
                                            int threads) {
  using Fn = void (*)(const double*, std::size_t, double*, std::size_t, std::size_t);
  static constexpr Fn fns[5] = {foldNodes<3>, foldNodes<4>, foldNodes<5>, foldNodes<6>, foldNodes<7>};
  std::vector<double> Mh(count * harmonicStrideOf(order));
  parallelFor(count, 4096, threads,
              [&](std::size_t b, std::size_t e, int) { fns[order - 3](M, mStride, Mh.data(), b, e); });
  return Mh;
}

void evaluateM2L(const FmmLists& lists, int threads, FmmTree& tree) {
  const M2lFn fn = m2lFor(tree);
  const std::vector<double> Mh =
      foldedMultipoles(tree.order, tree.M.data(), std::size_t(tree.mStride), tree.nodeCount(), threads);
  parallelFor(tree.nodeCount(), 16, threads, [&](std::size_t b, std::size_t e, int) {
    fn(lists.m2lStart.data(), lists.m2lSource.data(), lists.m2lShift.data(), lists, Mh.data(), tree.centre.data(),
       tree, b, e);
  });
}

void m2lWithKernels(int order, std::size_t count, const double* const* D, const double* const* M, double* L) {
  using Fn = void (*)(std::size_t, const double* const*, const double* const*, double*);
  static constexpr Fn fns[5] = {m2lWithKernels3, m2lWithKernels4, m2lWithKernels5, m2lWithKernels6, m2lWithKernels7};
  fns[order - 3](count, D, M, L);
}

void evaluateM2LFrom(const ExternalSources& src, int threads, FmmTree& tree) {
  if (src.m2lSource.empty()) return;
  const M2lFn fn = m2lFor(tree);
  const std::size_t count = std::size_t(*std::max_element(src.m2lSource.begin(), src.m2lSource.end())) + 1;
  const std::vector<double> Mh = foldedMultipoles(tree.order, src.M, std::size_t(tree.mStride), count, threads);
  parallelFor(tree.nodeCount(), 16, threads, [&](std::size_t b, std::size_t e, int) {
    fn(src.m2lStart.data(), src.m2lSource.data(), src.m2lShift.data(), src.geo, Mh.data(), src.centre, tree, b, e);
  });
}

void evaluateP2PFrom(const ExternalSources& src, const FmmTree& tree, const SortedCells& c, int threads,
                     FmmOutput out) {
  const Octree& o = tree.topo;
  if (src.p2pSource.empty()) return;
  const bool accel = out.gx != nullptr;
  parallelFor(o.nodeCount(), 8, threads, [&](std::size_t b, std::size_t e, int) {
    double p[kBlock], gx[kBlock], gy[kBlock], gz[kBlock];
    Lanes s;
    for (std::size_t A = b; A < e; ++A) {
      const std::uint32_t q0 = src.p2pStart[A], q1 = src.p2pStart[A + 1];
      if (q0 == q1) continue;
      const std::uint32_t a0 = o.cellBegin[A], a1 = a0 + o.cellCount[A];
      for (std::uint32_t q = q0; q < q1; ++q) {
        const std::uint32_t B = src.p2pSource[q];
        double v[3];
        src.geo.shiftVector(src.p2pShift[q], v);
        const std::uint32_t b0 = src.cellBegin[B], b1 = b0 + src.cellCount[B];
        for (std::uint32_t sb = b0; sb < b1; sb += kBlock) {
          const std::uint32_t se = std::min(b1, sb + kBlock);
          s.load(src.x, src.y, src.z, src.mass, sb, se, v);
          for (std::uint32_t ab = a0; ab < a1; ab += kBlock) {
            const std::uint32_t ae = std::min(a1, ab + kBlock);
            if (accel) p2pOneSidedForce(c, ab, ae, s, p, gx, gy, gz);
            else p2pOneSidedPot(c, ab, ae, s, p, gx, gy, gz);
            for (std::uint32_t i = ab; i < ae; ++i) {
              out.phi[i] += p[i - ab];
              if (accel) { out.gx[i] += gx[i - ab]; out.gy[i] += gy[i - ab]; out.gz[i] += gz[i - ab]; }
            }
          }
        }
      }
    }
  });
}

namespace {
/// One side of a table pair (potentials): the table's slot, the source's masses, the target's h, its sums.
struct TableSide {
  int slot;
  const double* m;
  double h;
  double* p;
};

/// Sides ordered by slot, two of one table per pass over it (tableP2PTwo: each side's sums the bits tableP2P gives
/// it alone), in parallel: the sides write distinct sums.
void evaluateTableSides(const std::vector<TableSide>& sides, const P2pTables& tables, int threads) {
  parallelFor((sides.size() + 1) / 2, 4, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = 2 * b; k < std::min(2 * e, sides.size()); ++k) {
      const TableSide& x = sides[k];
      if (k + 1 < std::min(2 * e, sides.size()) && sides[k + 1].slot == x.slot) {
        const TableSide& y = sides[k + 1];
        tableP2PTwo(*tables.bySlot(x.slot), x.m, x.h, x.p, y.m, y.h, y.p);
        ++k;
      } else {
        tableP2P(*tables.bySlot(x.slot), x.m, x.h, x.p, nullptr, nullptr, nullptr);
      }
    }
  });
}

}  // namespace

void evaluateP2P(const FmmLists& lists, const FmmTree& tree, const SortedCells& c, int threads, FmmOutput out) {
  const Octree& o = tree.topo;
  const bool accel = out.gx != nullptr;
  // regular leaves (4^3 lattices) and pairs of them at whole-leaf offsets go by table (p2p_tables.h)
  const RegularLeaves reg = findRegularLeaves(tree, c, threads);
  P2pTables tables;
  tables.prepare(reg, lists, threads);
  const double none[3] = {0, 0, 0};
  // each leaf with itself (overwrites its cells)
  std::vector<std::uint32_t> leaves;
  for (std::size_t i = 0; i < o.nodeCount(); ++i)
    if (o.isLeaf(i)) leaves.push_back(std::uint32_t(i));
  parallelFor(leaves.size(), 8, threads, [&](std::size_t b, std::size_t e, int) {
    for (std::size_t k = b; k < e; ++k) {
      const std::uint32_t L = leaves[k], cb = o.cellBegin[L], ce = cb + o.cellCount[L];
      if (const P2pTable* t = tables.find(reg, L, L, none))
        tableP2P(*t, &c.mass[cb], reg.h[L], &out.phi[cb], accel ? &out.gx[cb] : nullptr, accel ? &out.gy[cb] : nullptr,
                 accel ? &out.gz[cb] : nullptr);
      else (accel ? p2pSelfForce : p2pSelfPot)(c, cb, ce, out);
    }
  });
  // the mutual pairs, a chunk at a time: both sides into the chunk's buffers in parallel, then each leaf adds its
  // pairs' sides in list order (a leaf's entries: which pairs, which side, ascending)
  const std::size_t np = lists.p2pA.size();
  if (np == 0) return;
  std::vector<std::uint32_t> entryStart(o.nodeCount() + 1, 0), entry(2 * np);
  for (std::size_t q = 0; q < np; ++q) { ++entryStart[lists.p2pA[q] + 1]; ++entryStart[lists.p2pB[q] + 1]; }
  for (std::size_t i = 0; i < o.nodeCount(); ++i) entryStart[i + 1] += entryStart[i];
  {
    std::vector<std::uint32_t> fill(entryStart.begin(), entryStart.end() - 1);
    for (std::size_t q = 0; q < np; ++q) {  // pair q, side bit: 0 = the pair's A, 1 = its B
      entry[fill[lists.p2pA[q]]++] = std::uint32_t(q << 1);
      entry[fill[lists.p2pB[q]]++] = std::uint32_t(q << 1 | 1);
    }
  }
  std::vector<std::uint32_t> cursor(entryStart.begin(), entryStart.end() - 1);
  std::vector<std::uint32_t> slot(np);
  std::vector<double> bp(kChunkCells + 2 * kBlock), bx, by, bz;
  std::vector<TableSide> sides, bySlot;
  std::vector<std::uint8_t> tabled;  // per pair of the chunk: its table products made by slot (potentials)
  std::vector<std::uint32_t> slotStart(kOffsetSlots + 1);
  if (accel) { bx.resize(bp.size()); by.resize(bp.size()); bz.resize(bp.size()); }
  std::size_t q0 = 0;
  while (q0 < np) {
    // the chunk: pairs while their cells fit (at least one pair)
    std::size_t q1 = q0;
    std::uint32_t used = 0;
    while (q1 < np) {
      const std::uint32_t cells = o.cellCount[lists.p2pA[q1]] + o.cellCount[lists.p2pB[q1]];
      if (q1 > q0 && used + cells > kChunkCells) break;
      slot[q1] = used;
      used += cells;
      ++q1;
    }
    if (used > bp.size()) {
      bp.resize(used);
      if (accel) { bx.resize(used); by.resize(used); bz.resize(used); }
    }
    // potentials: the chunk's table products grouped by table, two sources per pass over a table (tableP2PTwo:
    // each side's sums the bits tableP2P gives it alone); the others pair by pair
    if (!accel) {
      sides.clear();
      tabled.assign(q1 - q0, 0);
      for (std::size_t q = q0; q < q1; ++q) {
        const std::uint32_t A = lists.p2pA[q], B = lists.p2pB[q];
        double v[3], mv[3];
        lists.shiftVector(lists.p2pShift[q], v);
        for (int d = 0; d < 3; ++d) mv[d] = -v[d];
        const int ab = tables.findSlot(reg, A, B, v);
        if (ab < 0) continue;
        tabled[q - q0] = 1;
        const std::uint32_t s = slot[q], sb = s + o.cellCount[A];
        sides.push_back(TableSide{ab, &c.mass[o.cellBegin[B]], reg.h[A], &bp[s]});
        sides.push_back(TableSide{tables.findSlot(reg, B, A, mv), &c.mass[o.cellBegin[A]], reg.h[B], &bp[sb]});
      }
      // by table: a counting sort on the slot
      std::fill(slotStart.begin(), slotStart.end(), 0u);
      for (const TableSide& x : sides) ++slotStart[x.slot + 1];
      for (int k = 0; k < kOffsetSlots; ++k) slotStart[k + 1] += slotStart[k];
      bySlot.resize(sides.size());
      for (const TableSide& x : sides) bySlot[slotStart[x.slot]++] = x;
      sides.swap(bySlot);
      evaluateTableSides(sides, tables, threads);
    }
    parallelFor(q1 - q0, 4, threads, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t q = q0 + b; q < q0 + e; ++q) {
        if (!accel && tabled[q - q0]) continue;  // done above
        const std::uint32_t A = lists.p2pA[q], B = lists.p2pB[q], s = slot[q];
        const std::uint32_t a0 = o.cellBegin[A], b0 = o.cellBegin[B];
        double v[3], mv[3];
        lists.shiftVector(lists.p2pShift[q], v);  // B seen from A at B + v, A from B at A - v
        for (int d = 0; d < 3; ++d) mv[d] = -v[d];
        const P2pTable* ab = tables.find(reg, A, B, v);
        if (ab) {  // B's cells into A's slots, A's into B's (the table of the opposite offset)
          const P2pTable* ba = tables.find(reg, B, A, mv);
          const std::uint32_t sb = s + o.cellCount[A];
          tableP2P(*ab, &c.mass[b0], reg.h[A], &bp[s], accel ? &bx[s] : nullptr, accel ? &by[s] : nullptr,
                   accel ? &bz[s] : nullptr);
          tableP2P(*ba, &c.mass[a0], reg.h[B], &bp[sb], accel ? &bx[sb] : nullptr, accel ? &by[sb] : nullptr,
                   accel ? &bz[sb] : nullptr);
        } else if (accel) p2pPairForce(c, a0, a0 + o.cellCount[A], b0, b0 + o.cellCount[B], v, &bp[s], &bx[s], &by[s], &bz[s]);
        else p2pPairPot(c, a0, a0 + o.cellCount[A], b0, b0 + o.cellCount[B], v, &bp[s], nullptr, nullptr, nullptr);
      }
    });
    const std::uint32_t qEnd = std::uint32_t(q1);
    parallelFor(leaves.size(), 32, threads, [&](std::size_t b, std::size_t e, int) {
      for (std::size_t k = b; k < e; ++k) {
        const std::uint32_t L = leaves[k], cb = o.cellBegin[L], n = o.cellCount[L];
        std::uint32_t& cur = cursor[L];
        for (; cur < entryStart[L + 1] && (entry[cur] >> 1) < qEnd; ++cur) {
          const std::uint32_t q = entry[cur] >> 1;
          const std::uint32_t s = slot[q] + ((entry[cur] & 1) ? o.cellCount[lists.p2pA[q]] : 0);
          for (std::uint32_t i = 0; i < n; ++i) out.phi[cb + i] += bp[s + i];
          if (accel)
            for (std::uint32_t i = 0; i < n; ++i) {
              out.gx[cb + i] += bx[s + i];
              out.gy[cb + i] += by[s + i];
              out.gz[cb + i] += bz[s + i];
            }
        }
      }
    });
    q0 = q1;
  }
}

}  // namespace fmm
}  // namespace amrgrav
