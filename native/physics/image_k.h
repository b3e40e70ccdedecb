/// \file image_k.h
/// \brief The periodic image test: which image of a node a group sees, whether the group may use the node's
/// expansion there, and whether the node may take its subtree's Ewald correction (hoisting). The one definition,
/// used by the CPU walk (cpu/cpu_walk.cpp) and the CUDA walk and correction kernels (cuda/kernel_walk.cu); also the
/// image of a single coordinate nearest a centre, with which both place the cells of an expanding group's lists;
/// which groups expand their correction (a group that does walks its own tree with hoisted nodes, whose image tags
/// then place the MAC of everything below them), and the tags themselves.
#pragma once
#include "core/hostdevice.h"
#include "physics/rounding.h"

#ifndef AG_HOIST_MARGIN
#define AG_HOIST_MARGIN 2.0
#endif

namespace amrgrav {

/// The hoisting margin: a node takes its subtree's correction when its other images are more than this many MAC
/// radii away (ewald/expansion_k.h, bench/RESULTS.md).
constexpr double kEwaldHoistMargin = AG_HOIST_MARGIN;

/// One periodic axis (period P > 0, invP = 1/P) of periodicNodeImage: the node's coordinate c at the image nearest
/// the group's [lo, hi] (shifted), the periods added (k, a whole number), and the axis's parts of the usable and
/// hoistable tests. Straight-line code, so that a loop over several nodes vectorises (cpu/walk_lists.cpp).
template <class Rn = RoundNearest>
AG_HD void periodicAxisImage(double P, double invP, double reach, double lo, double hi, double c, double macRadius,
                             double& shifted, double& k, bool& usable, bool& hoistable) {
  const double sep = Rn::sub(Rn::mul(0.5, Rn::add(lo, hi)), c);
  k = Rn::rint(Rn::mul(sep, invP));
  const double nearest = Rn::sub(sep, Rn::mul(P, k));  // the separation's nearest image
  shifted = Rn::add(c, Rn::sub(sep, nearest));         // a whole number of periods
  const double up = Rn::sub(hi, shifted), down = Rn::sub(shifted, lo);
  const double far = up > down ? up : down;
  const double gap = Rn::sub(P, far);
  usable = (far <= reach) & (gap > macRadius);
  hoistable = gap > Rn::mul(kEwaldHoistMargin, macRadius);
}

/// The image of a node that a group sees, and whether the group may use the node's expansion there.
/// The node (com, MAC radius R = l/theta + delta) is placed at the image whose com is nearest the group's centre
/// (`shifted`). For every mass j of the node, psi(t - x_j) = 1/|t - x_j - s| + C_ext(t - x_j - s) holds exactly for
/// that one shift s, with C_ext(x) = psi(x) - 1/|x| the correction continued beyond the half box (the table
/// reaches 9/16 of a period). Both parts are expanded about the shifted com, so the node is usable when:
///  (1) the MAC holds at the shifted com (tested by the caller, with the shifted com);
///  (2) every separation group point - shifted com lies within the table's reach on each periodic axis;
///  (3) the node's other images, C_ext's singularities, also satisfy the MAC: they are at least
///      P - (largest separation along that axis) away, which must exceed R.
/// A node that fails (2) or (3) is opened; its cells then take their own nearest images. This replaces the
/// classic "open every node that straddles the half-box distance", which opens a whole shell of cells around
/// the half-box surface for each group of 32.
/// The group's box is [glo, ghi] (its cell centres). `image` (optional) receives the number of periods added per
/// axis, rint(sep / P), ties to even (0 on isolated axes); `hoistable` (optional) whether the node may also take
/// its subtree's correction (ewald/expansion_k.h): (3) with kEwaldHoistMargin x R.
/// View: anything with period[3], invPeriod[3] and reach[3] as doubles (an EwaldTableViewOf<double or float>).
/// Per periodic axis, every operation rounded on its own:
///   sep = 0.5 (glo + ghi) - com,  k = rint(sep invP),  shifted = com + (sep - (sep - P k)),
///   far = max(ghi - shifted, shifted - glo),  usable: far <= reach and P - far > R,
///   hoistable: usable and P - far > margin R.
template <class Rn = RoundNearest, class View>
AG_HD bool periodicNodeImage(const View& v, const double* glo, const double* ghi, const double* com,
                             double macRadius, double shifted[3], int* image = nullptr, bool* hoistable = nullptr) {
  bool ok = true, hoist = true;
  AG_RULE_UNROLL
  for (int d = 0; d < 3; ++d) {
    const double c = com[d];  // read before shifted[d] is written: com may be shifted itself
    shifted[d] = c;
    if (image) image[d] = 0;
    if (v.period[d] <= 0) continue;
    double s, k;
    bool usable, hoistAxis;
    periodicAxisImage<Rn>(v.period[d], v.invPeriod[d], v.reach[d], glo[d], ghi[d], c, macRadius, s, k, usable,
                          hoistAxis);
    shifted[d] = s;
    if (image) image[d] = int(k);
    ok = ok && usable;
    hoist = hoist && hoistAxis;
  }
  if (hoistable) *hoistable = ok && hoist;
  return ok;
}

/// The image of coordinate x nearest the centre c along an axis of period P (invP = 1/P; P = invP = 0 for an
/// isolated axis, which leaves x as it is): x - P rint((x - c) invP), every operation rounded on its own.
template <class Rn = RoundNearest>
AG_HD double imageNearCentre(double x, double c, double P, double invP) {
  return Rn::sub(x, Rn::mul(P, Rn::rint(Rn::mul(Rn::sub(x, c), invP))));
}

// ---- periodic groups that expand their correction, and hoisted nodes (ewald/expansion_k.h)

/// Largest group half-diagonal, in (finest) table spacings, for which a group uses the expansion. The expansion
/// evaluates a table point's cubic up to this + 0.87 spacings from it, and its gap from per-pair lookups grows
/// about as the fourth power of the group's size: at 3.5 (1/16 of the period at the default resolution 28) groups
/// of 64 cells expand from 64^3 up (at 1, from 256^3 up), with a gap of a sixth of the walk's own error on a 64^3
/// sine of the density contrast (the walk in groups of 64 still more accurate than in groups of 32 per pair); at
/// 4.75 32^3 would expand too, but its gap (1.4x the walk's error) would not be small (bench/RESULTS.md,
/// "Periodic groups of 64").
constexpr double kEwaldExpansionSpacings = 3.5;
/// Does the group whose cell centres span [lo, hi] take its Ewald correction as one expansion about its centre
/// (ewald/expansion_k.h)? Its half-diagonal must be at most kEwaldExpansionSpacings of the finest table spacing,
/// and every separation must stay inside the table's reach, P/2 + e <= reach. It decides the lists too (a group
/// that expands walks its own tree with hoisted nodes, whose image tags place the MAC below them), so it rounds as
/// the other rules: e = (hi - lo) / 2, ((e0^2 + e1^2) + e2^2) <= lim^2, every operation on its own.
/// (V: a table view with double geometry: h, invUnit, period, reach.)
template <class Rn = RoundNearest, class V>
AG_HD bool ewaldGroupExpands(const V& v, const double* lo, const double* hi) {
  double e2 = 0, hmin = 0;
  bool ok = true;
  AG_RULE_UNROLL
  for (int d = 0; d < 3; ++d) {
    const double e = Rn::mul(0.5, Rn::sub(hi[d], lo[d]));
    e2 = Rn::add(e2, Rn::mul(e, e));
    const double hd = Rn::div(v.h[d], v.invUnit);
    hmin = d == 0 || hd < hmin ? hd : hmin;
    if (v.period[d] > 0) ok = ok && Rn::add(Rn::mul(0.5, v.period[d]), e) <= v.reach[d];
  }
  const double lim = Rn::mul(kEwaldExpansionSpacings, hmin);
  return ok && e2 <= Rn::mul(lim, lim);
}

/// Hoisted corrections. In an expanding group's walk over its own tree, a source's correction is taken at the
/// first node on its path from the root whose image the group can use (periodicNodeImage) with its other images,
/// C_ext's singularities, at least kEwaldHoistMargin (2) MAC radii away: that node's multipoles at that image,
/// whether the node is then accepted or opened. Everything below an opened node of that kind is seen through the
/// same image (so psi = 1/|s| + C_ext(s) keeps one s per mass) and adds no further correction. An accepted node's
/// correction already rests on this bound with margin 1, but a hoisted node carries far more mass: on a uniform
/// grid (where the potential of the fluctuations is small against that of the whole mass) margins 1.5 and 1 left
/// gaps of 4.6e-4 of max |phi| against per-pair corrections, margin 2 1.8e-5 (bench/RESULTS.md). A walk entry
/// below such a node carries an image
/// tag: bit 7 set, and the periods added per axis (-1, 0 or 1) plus 1 in two bits each; 0 = no tag.
constexpr unsigned kHoistedTag = 0x80u;

/// The tag of a node image (periods per axis), or 0 when a shift is outside -1..1 (the node is then not hoisted).
AG_HD unsigned hoistedImageTag(const int* image) {
  unsigned t = kHoistedTag;
  for (int d = 0; d < 3; ++d) {
    if (image[d] < -1 || image[d] > 1) return 0u;
    t |= unsigned(image[d] + 1) << (2 * d);
  }
  return t;
}

/// Coordinate x seen through a tag's image along axis d (period P; 0 for an isolated axis, whose shift is 0).
/// k P is exact for k in -1..1, so x + k P rounds once (fused or not).
template <class Rn = RoundNearest>
AG_HD double taggedImage(double x, unsigned tag, int d, double P) {
  const int k = int((tag >> (2 * d)) & 3u) - 1;
  return Rn::add(x, Rn::mul(double(k), P));
}

}  // namespace amrgrav
