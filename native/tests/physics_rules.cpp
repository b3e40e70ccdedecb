/// \file physics_rules.cpp
/// \brief amrgrav_physics_rules: the rules that decide which interactions happen (native/physics/: the MAC, the
/// periodic image test, the node moments and MAC radii, the LET choice and its growth for softened targets, the FMM's
/// pair MAC, the particles' node extents and the spline rule with them, the FMM upward pass's sums, centres and
/// multipole terms), checked on the host without a GPU.
///
/// Each rule is one template over a rounding policy (physics/rounding.h). The CUDA backend instantiates it with
/// RoundNearest's device half, __dadd_rn and friends: one rounding per operation, never fused. This program
/// instantiates every rule twice on the host and checks that the two agree bit for bit:
///   - RoundNearest, the plain operators, compiled with the core's flags (-ffp-contract=off): what the CPU backend
///     runs;
///   - DeviceRn, which forces every result through a volatile double: one rounding per operation whatever the
///     compiler and its flags, the arithmetic of the device's intrinsics (IEEE binary64, round to nearest even,
///     gradual underflow: the device's double operations never flush denormals).
/// It checks them on edge cases (a point at exactly the MAC radius, touching boxes, nodes at exactly half a period,
/// ties in the image choice, zero-mass and signed-mass nodes, denormal and huge values) and on random sweeps, with
/// the physically right answers where they can be worked out by hand; then it runs the core library as built
/// (libamrgrav_core: the root cube, the tree, the moments, S, the LET choice; the particles' tree's extents) on
/// AMR-like cells and clustered particles and re-derives every node with DeviceRn in the CUDA kernels' order
/// (kernel_keys.cu, kernel_moments.cu, kernel_let.cu, kernel_particles.cu), bit for bit. A third policy, FusedRn, rounds a product feeding a sum once (std::fma, what a contracting compiler emits):
/// the sweeps must see it differ somewhere, which shows that they would catch a contracted build.
/// Prints one line per part and a summary; exits 1 on any failure. CTest runs it (label cpu), and so does
/// test/physics-rules.test.ts.
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "ewald/lookup_k.h"
#include "ewald/walk_setup.h"
#include "fmm/multi_index.h"
#include "fmm/upward_emulate.h"
#include "fmm/upward_k.h"
#include "let/let.h"
#include "physics/fmm_mac_k.h"
#include "physics/image_k.h"
#include "physics/let_accept_k.h"
#include "physics/fmm_let_k.h"
#include "physics/mac_k.h"
#include "physics/moments_k.h"
#include "physics/rounding.h"
#include "physics/softening_k.h"
#include "tree/keys.h"
#include "tree/particle_tree.h"
#include "tree/source_tree.h"
#include "tree/tree.h"

namespace {

using namespace amrgrav;

// ---------------------------------------------------------------------------------------------------- policies

/// The device's arithmetic on the host: every operation's result is stored to and read back from a volatile
/// double, so it is rounded to binary64 on its own and never fused with the next one, whatever the flags.
struct DeviceRn {
  static double pin(double v) {
    volatile double r = v;
    return r;
  }
  static double add(double a, double b) { return pin(pin(a) + pin(b)); }
  static double sub(double a, double b) { return pin(pin(a) - pin(b)); }
  static double mul(double a, double b) { return pin(pin(a) * pin(b)); }
  static double div(double a, double b) { return pin(pin(a) / pin(b)); }
  static double sqrt(double a) { return pin(std::sqrt(pin(a))); }
  static double rint(double a) { return pin(std::rint(pin(a))); }
  static double abs(double a) { return pin(std::fabs(pin(a))); }
};

/// A contracting compiler's arithmetic, for the canary: a product that feeds a sum is not rounded (std::fma),
/// anything else is DeviceRn's.
struct FusedRn {
  struct Prod {
    double a, b;
    operator double() const { return DeviceRn::mul(a, b); }
  };
  static Prod mul(double a, double b) { return Prod{a, b}; }
  static double add(double a, double b) { return DeviceRn::add(a, b); }
  static double add(Prod p, double c) { return DeviceRn::pin(std::fma(p.a, p.b, c)); }
  static double add(double c, Prod p) { return DeviceRn::pin(std::fma(p.a, p.b, c)); }
  static double add(Prod p, Prod q) { return DeviceRn::pin(std::fma(p.a, p.b, double(q))); }
  static double sub(double a, double b) { return DeviceRn::sub(a, b); }
  static double sub(Prod p, double c) { return DeviceRn::pin(std::fma(p.a, p.b, -c)); }
  static double sub(double c, Prod p) { return DeviceRn::pin(std::fma(-p.a, p.b, c)); }
  static double sub(Prod p, Prod q) { return DeviceRn::pin(std::fma(p.a, p.b, -double(q))); }
  static double div(double a, double b) { return DeviceRn::div(a, b); }
  static double sqrt(double a) { return DeviceRn::sqrt(a); }
  static double rint(double a) { return DeviceRn::rint(a); }
  static double abs(double a) { return DeviceRn::abs(a); }
};

// ---------------------------------------------------------------------------------------------------- checking

std::uint64_t bitsOf(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

/// Bit for bit, except that any NaN equals any NaN: the payload of a NaN made on the device differs from the
/// host's (none reaches the rules in a solve: validation refuses NaN and overflowing masses).
bool sameBits(double a, double b) { return bitsOf(a) == bitsOf(b) || (std::isnan(a) && std::isnan(b)); }

struct Report {
  const char* part;
  long checks = 0, failures = 0;
  long fusedCases = 0, fusedDiffer = 0;  // the canary
  explicit Report(const char* p) : part(p) {}
  void expect(bool ok, const std::string& what) {
    ++checks;
    if (!ok) {
      ++failures;
      if (failures <= 20) std::printf("  FAIL [%s] %s\n", part, what.c_str());
    }
  }
  void same(double host, double device, const std::string& what) {
    char buf[160];
    std::snprintf(buf, sizeof buf, " (host %.17g 0x%016" PRIx64 ", device %.17g 0x%016" PRIx64 ")", host,
                  bitsOf(host), device, bitsOf(device));
    expect(sameBits(host, device), what + buf);
  }
  void canary(bool differs) {
    ++fusedCases;
    if (differs) ++fusedDiffer;
  }
};

std::string fmt(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[240];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

/// A periodic view as the rules read it (period, invPeriod, reach; h and invUnit for the expansion's test).
struct TestView {
  double period[3] = {0, 0, 0}, invPeriod[3] = {0, 0, 0}, reach[3] = {0, 0, 0};
  double h[3] = {1, 1, 1}, invUnit = 1;
};
TestView periodicView(double P0, double P1, double P2) {
  TestView v;
  const double P[3] = {P0, P1, P2};
  for (int d = 0; d < 3; ++d) {
    v.period[d] = P[d];
    v.invPeriod[d] = P[d] > 0 ? 1.0 / P[d] : 0.0;
    v.reach[d] = P[d] > 0 ? 0.5625 * P[d] : 0.0;
    v.h[d] = 1.0 / 56;
  }
  return v;
}

/// Random doubles with a spread of exponents (and exact small integers and dyadic fractions now and then).
struct Rand {
  std::mt19937_64 g;
  explicit Rand(std::uint64_t seed) : g(seed) {}
  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(g); }
  int integer(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(g); }
  double scaled() {  // sign * mantissa * 2^e, e in [-30, 30]
    const double m = uniform(0.5, 1.0);
    return (integer(0, 1) ? -1 : 1) * std::ldexp(m, integer(-30, 30));
  }
  double coordinate(double scale) {  // mostly in [0, scale), sometimes dyadic
    if (integer(0, 7) == 0) return scale * integer(0, 64) / 64.0;
    return uniform(0, scale);
  }
};

// ---------------------------------------------------------------------------------------------------- the FMM's MAC

template <class Rn>
bool fmmPair(const double* ca, double ra, double ma, double lowA, const double* cb, double rb, double mb, double lowB,
             double theta, int order, double tol, double accelLimit = 0, bool leafA = true, bool leafB = true) {
  return fmmPairAccepts<Rn>(ca, ra, fmmCriticalRadius<Rn>(ra, theta), ma, lowA, cb, rb, fmmCriticalRadius<Rn>(rb, theta),
                            mb, lowB, order, tol, accelLimit, leafA, leafB);
}

void checkFmmMac(Report& rep) {
  const double a[3] = {0, 0, 0};
  // the opening angle alone: (r_A + r_B) / theta = R exactly rejects (strictly inside), a little further accepts
  {
    const double b[3] = {2, 0, 0}, b2[3] = {std::nextafter(2.0, 3.0), 0, 0};
    rep.expect(!fmmPair<RoundNearest>(a, 0.5, 1, 1, b, 0.5, 1, 1, 0.5, 5, 0) &&
                   !fmmPair<DeviceRn>(a, 0.5, 1, 1, b, 0.5, 1, 1, 0.5, 5, 0),
               "FMM MAC: (r_A + r_B) / theta = R rejects");
    rep.expect(fmmPair<RoundNearest>(a, 0.5, 1, 1, b2, 0.5, 1, 1, 0.5, 5, 0) &&
                   fmmPair<DeviceRn>(a, 0.5, 1, 1, b2, 0.5, 1, 1, 0.5, 5, 0),
               "FMM MAC: one ulp beyond accepts with tolerance 0");
  }
  // the error bound by hand: r 1/4 each, R 4, p 3: ((1/2)/4)^4 / (4 - 1/2) = 2^-12 / 3.5 = 6.975e-5 (times |M| 1,
  // against tolerance x phiLow 1): tolerance 1e-4 accepts, 5e-5 rejects; a lighter source (|M| 0.5) passes at 5e-5
  // one way but the pair needs both
  {
    const double b[3] = {0, 4, 0};
    rep.expect(fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, 1e-4), "FMM MAC: bound below tolerance accepts");
    rep.expect(!fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, 5e-5), "FMM MAC: bound above tolerance rejects");
    rep.expect(!fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 0.5, 1, 0.5, 3, 5e-5), "FMM MAC: one side failing rejects");
    rep.expect(fmmPair<RoundNearest>(a, 0.25, 0.5, 1, b, 0.25, 0.5, 1, 0.5, 3, 5e-5), "FMM MAC: lighter nodes accept");
  }
  // test 2b (the target side) by hand: a big leaf (r 1) and a point-like light node (r 0) 4 apart, p 3, masses too
  // small for test 2: (1/4)^4 (4 + 1) / (4 - 1) = 6.51e-3 for the big side (0 for the other) against 2 tolerance:
  // 4e-3 accepts, 3e-3 rejects, whichever node is first; each rounding alike; a big internal node is not tested
  {
    const double b[3] = {0, 4, 0};
    rep.same(fmmTargetSideError<RoundNearest>(1.0, 4.0, 1.0, 3), 0.00390625 * 5 / 3, "FMM MAC: target side's bound");
    for (double tol : {4e-3, 3e-3}) {
      const bool ab = fmmPair<RoundNearest>(a, 1.0, 1e-9, 1, b, 0.0, 1e-9, 1, 0.5, 3, tol, 0, true, false);
      const bool ba = fmmPair<RoundNearest>(b, 0.0, 1e-9, 1, a, 1.0, 1e-9, 1, 0.5, 3, tol, 0, false, true);
      const bool dv = fmmPair<DeviceRn>(a, 1.0, 1e-9, 1, b, 0.0, 1e-9, 1, 0.5, 3, tol, 0, true, false);
      rep.expect(ab == (tol == 4e-3) && ba == ab && dv == ab, tol == 4e-3 ? "FMM MAC: target side below the limit accepts"
                                                                         : "FMM MAC: target side above the limit rejects");
    }
    rep.expect(fmmPair<RoundNearest>(a, 1.0, 1e-9, 1, b, 0.0, 1e-9, 1, 0.5, 3, 3e-3, 0, false, true),
               "FMM MAC: test 2b only for leaves");
  }
  // test 3 (accelerations) by hand, test 2's pair: (p + 1) q^p / (R - r_A - r_B)^2 = 4 (1/8)^3 / 3.5^2 = 6.378e-4
  // times the larger |M| (1) against the limit: 7e-4 accepts, 6e-4 rejects, alone (tolerance 0) or after test 2;
  // the heavier side decides; each rounding alike
  {
    const double b[3] = {0, 4, 0};
    for (double tol : {0.0, 1e-4}) {
      rep.expect(fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, tol, 7e-4) &&
                     fmmPair<DeviceRn>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, tol, 7e-4),
                 "FMM MAC: gradient bound below the limit accepts");
      rep.expect(!fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, tol, 6e-4) &&
                     !fmmPair<DeviceRn>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, tol, 6e-4),
                 "FMM MAC: gradient bound above the limit rejects");
      rep.expect(!fmmPair<RoundNearest>(a, 0.25, 0.5, 1, b, 0.25, 1, 1, 0.5, 3, tol, 6e-4) &&
                     !fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 0.5, 1, 0.5, 3, tol, 6e-4),
                 "FMM MAC: the heavier node decides test 3");
      rep.expect(fmmPair<RoundNearest>(a, 0.25, 0.5, 1, b, 0.25, 0.5, 1, 0.5, 3, tol, 6e-4),
                 "FMM MAC: lighter nodes pass test 3");
    }
    rep.expect(!fmmPair<RoundNearest>(a, 0.25, 1, 1, b, 0.25, 1, 1, 0.5, 3, 5e-5, 7e-4),
               "FMM MAC: test 3 does not override test 2");
    rep.expect(fmmAccelLimit<RoundNearest>(1e-5, 8, 2) == 2e-5 && fmmAccelLimit<RoundNearest>(0, 8, 2) == 0,
               "FMM MAC: the acceleration limit is tolerance |M_root| / side^2");
  }
  // the potential's lower bound by hand: node at the centre of the unit root cube, radius 0: |M| / (sqrt(3) / 2)
  {
    const double c[3] = {0.5, 0.5, 0.5}, lo[3] = {0, 0, 0};
    rep.same(fmmPotentialLowerBound<RoundNearest>(c, 0.0, lo, 1.0, 3.0), 3.0 / (std::sqrt(3.0) / 2),
             "FMM phiLow at the centre");
  }
  // random sweeps: the host's rule against the device's rounding, bit for bit (and the canary)
  Rand rnd(2026);
  for (int k = 0; k < 200000; ++k) {
    double ca[3], cb[3], lo[3];
    for (int d = 0; d < 3; ++d) {
      ca[d] = rnd.coordinate(1.0);
      cb[d] = rnd.coordinate(1.0);
      lo[d] = -rnd.uniform(0, 0.01);
    }
    const double ra = rnd.uniform(0, 0.2), rb = rnd.uniform(0, 0.2), ma = rnd.uniform(0, 2), mb = rnd.uniform(0, 2);
    const double theta = rnd.uniform(0.2, 0.99), tol = rnd.integer(0, 3) == 0 ? 0.0 : std::ldexp(1.0, -rnd.integer(5, 20));
    const int order = rnd.integer(3, 7);
    const double la = fmmPotentialLowerBound<RoundNearest>(ca, ra, lo, 1.02, 5.0);
    rep.same(la, fmmPotentialLowerBound<DeviceRn>(ca, ra, lo, 1.02, 5.0), "FMM phiLow sweep");
    const double lb = fmmPotentialLowerBound<RoundNearest>(cb, rb, lo, 1.02, 5.0);
    const bool h = fmmPair<RoundNearest>(ca, ra, ma, la, cb, rb, mb, lb, theta, order, tol);
    rep.expect(h == fmmPair<DeviceRn>(ca, ra, ma, la, cb, rb, mb, lb, theta, order, tol), "FMM MAC sweep: host = device");
    rep.canary(fmmPotentialLowerBound<FusedRn>(ca, ra, lo, 1.02, 5.0) != la);
  }
  // the signed sources' estimate (periodic boxes) by hand: one unit mass at distance d = 1/4 from B's centre (Q_n =
  // d^n), r_A = r_B = 1/4, R = 4, p = 3: [sum_n C(4, n) d^n r_A^(4-n) + max(Q_3 r_B, Q_2 r_B^2)] / (R^4 (R - 1/2)) =
  // [(1/4 + 1/4)^4 - (1/4)^4 + (1/4)^4] / (256 * 3.5) = the point mass's bound 2^-4 / 896 = 6.975e-5
  {
    const double q[4] = {1, 0.25, 0.0625, 0.015625};
    rep.same(fmmSignedPairError<RoundNearest>(q, 0.25, 0.25, 4.0, 3), 0.0625 / 896, "FMM signed estimate, one mass");
    // a source whose moments vanish (a mass at its centre) leaves the target side's truncation: r_A^4 / (R^4 (R - 1/2))
    const double q0[4] = {1, 0, 0, 0};
    rep.same(fmmSignedPairError<RoundNearest>(q0, 0.25, 0.25, 4.0, 3), 0.00390625 / 896, "FMM signed estimate, centred");
    const double a2[3] = {0, 0, 0}, b[3] = {0, 4, 0};
    rep.expect(fmmSignedPairAccepts<RoundNearest>(a2, 0.25, 0.5, q, b, 0.25, 0.5, q, 1.0, 3, 1e-4), "FMM signed MAC accepts");
    rep.expect(!fmmSignedPairAccepts<RoundNearest>(a2, 0.25, 0.5, q, b, 0.25, 0.5, q, 1.0, 3, 5e-5), "FMM signed MAC rejects");
  }
  for (int k = 0; k < 100000; ++k) {
    double ca[3], cb[3], qa[8], qb[8];
    for (int d = 0; d < 3; ++d) {
      ca[d] = rnd.coordinate(1.0);
      cb[d] = rnd.coordinate(1.0);
    }
    const double ra = rnd.uniform(0, 0.2), rb = rnd.uniform(0, 0.2);
    for (int n = 0; n < 8; ++n) {
      qa[n] = rnd.uniform(0, 2) * std::pow(ra, n);
      qb[n] = rnd.uniform(0, 2) * std::pow(rb, n);
    }
    const double theta = rnd.uniform(0.2, 0.99), tol = rnd.integer(0, 3) == 0 ? 0.0 : std::ldexp(1.0, -rnd.integer(5, 20));
    const int order = rnd.integer(3, 7);
    const double scale = rnd.uniform(0.5, 5);
    const bool h = fmmSignedPairAccepts<RoundNearest>(ca, ra, fmmCriticalRadius<RoundNearest>(ra, theta), qa, cb, rb,
                                                      fmmCriticalRadius<RoundNearest>(rb, theta), qb, scale, order, tol);
    const bool dv = fmmSignedPairAccepts<DeviceRn>(ca, ra, fmmCriticalRadius<DeviceRn>(ra, theta), qa, cb, rb,
                                                   fmmCriticalRadius<DeviceRn>(rb, theta), qb, scale, order, tol);
    rep.expect(h == dv, "FMM signed MAC sweep: host = device");
    const double R = std::sqrt(squaredNorm(ca[0] - cb[0], ca[1] - cb[1], ca[2] - cb[2])) + 1.0;
    rep.same(fmmSignedPairError<RoundNearest>(qb, ra, rb, R, order), fmmSignedPairError<DeviceRn>(qb, ra, rb, R, order),
             "FMM signed estimate sweep: host = device");
  }
}

// ---------------------------------------------------------------------------------------------------- the MAC

template <class Rn>
bool mac(const double* c, double r, const double* lo, const double* hi) {
  return macAccepts<Rn>(c[0], c[1], c[2], r, lo, hi);
}

void checkMac(Report& rep) {
  const double lo[3] = {0.5, 0.5, 0.5}, hi[3] = {0.75, 0.75, 0.75};
  // a point exactly at the MAC radius is not accepted (strictly beyond); one ulp further it is
  {
    const double c[3] = {0.25, 0.625, 0.625};  // 0.25 from the box, exactly
    rep.expect(!mac<RoundNearest>(c, 0.25, lo, hi) && !mac<DeviceRn>(c, 0.25, lo, hi), "MAC: at exactly R rejects");
    const double c2[3] = {0.25 - std::ldexp(1.0, -54), 0.625, 0.625};  // distance 0.25 + 2^-54: one ulp further
    rep.expect(mac<RoundNearest>(c2, 0.25, lo, hi) && mac<DeviceRn>(c2, 0.25, lo, hi), "MAC: one ulp beyond R accepts");
  }
  // inside or on the box: distance 0, never accepted, even with R = 0
  {
    const double in[3] = {0.6, 0.7, 0.5}, face[3] = {0.75, 0.6, 0.6};
    rep.expect(!mac<RoundNearest>(in, 0.0, lo, hi) && !mac<DeviceRn>(in, 0.0, lo, hi), "MAC: inside rejects");
    rep.expect(!mac<RoundNearest>(face, 0.0, lo, hi) && !mac<DeviceRn>(face, 0.0, lo, hi), "MAC: on a face rejects");
    rep.same(distanceSquaredToBox<RoundNearest>(0.6, 0.7, 0.5, lo, hi), 0.0, "distance inside is exactly 0");
  }
  // a corner: (3, 4, 0) x 2^-4 from the box's corner, distance 5/16 exactly; a degenerate box (a cell: the vote)
  {
    const double c[3] = {0.75 + 3.0 / 16, 0.75 + 4.0 / 16, 0.6};
    rep.same(distanceSquaredToBox<RoundNearest>(c[0], c[1], c[2], lo, hi), 25.0 / 256, "corner distance^2 = 25/256");
    rep.expect(!mac<RoundNearest>(c, 5.0 / 16, lo, hi) && mac<RoundNearest>(c, std::nextafter(5.0 / 16, 0.0), lo, hi),
               "MAC: corner at R rejects, just inside R accepts");
    const double p[3] = {0.75, 0.75, 0.6};  // a single cell at the corner: the same test as the box
    rep.expect(mac<DeviceRn>(c, 0.3, p, p) == mac<DeviceRn>(c, 0.3, lo, hi), "MAC: a point box is the vote's test");
  }
  // touching boxes: a node's com on the group box's face (x = lo), 1/8 above it in y
  {
    const double c[3] = {0.5, 0.875, 0.6};
    rep.expect(mac<RoundNearest>(c, 0.0625, lo, hi) && !mac<RoundNearest>(c, 0.125, lo, hi),
               "MAC: 1/8 above the box: R 1/16 accepts, 1/8 rejects");
  }
  // far accepts, near rejects (hand-checkable): theta 0.5, l 0.25 -> R = 0.5
  {
    const double far[3] = {2.0, 0.6, 0.6}, near[3] = {1.0, 0.6, 0.6};
    rep.expect(mac<RoundNearest>(far, 0.5, lo, hi) && !mac<RoundNearest>(near, 0.5, lo, hi), "MAC: far/near");
  }
  // denormals: distances of 1e-160 square to denormals, still ordered exactly
  {
    const double l0[3] = {0, 0, 0}, h0[3] = {0, 0, 0};
    const double c[3] = {1e-160, 0, 0};
    const double d2h = distanceSquaredToBox<RoundNearest>(c[0], c[1], c[2], l0, h0);
    rep.same(d2h, distanceSquaredToBox<DeviceRn>(c[0], c[1], c[2], l0, h0), "denormal distance^2");
    rep.expect(d2h > 0 && d2h < 2.2250738585072014e-308, "1e-160 squared is a denormal, not flushed");
    rep.expect(mac<RoundNearest>(c, 1e-161, l0, h0) && mac<DeviceRn>(c, 1e-161, l0, h0),
               "MAC: denormal distance beats a smaller denormal radius");
  }
  // huge values: both squares overflow to infinity, inf > inf is false: rejected (conservative)
  {
    const double c[3] = {1e300, 0.6, 0.6};
    rep.expect(!mac<RoundNearest>(c, 1e200, lo, hi) && !mac<DeviceRn>(c, 1e200, lo, hi),
               "MAC: overflowing distance and radius reject");
    rep.expect(mac<RoundNearest>(c, 1.0, lo, hi) && mac<DeviceRn>(c, 1.0, lo, hi), "MAC: overflowing distance accepts");
  }
  // random sweep
  Rand rnd(1);
  for (int it = 0; it < 200000; ++it) {
    double l[3], h[3], c[3];
    const double s = std::ldexp(1.0, rnd.integer(-20, 20));
    for (int d = 0; d < 3; ++d) {
      l[d] = rnd.coordinate(s);
      h[d] = l[d] + (rnd.integer(0, 3) == 0 ? 0.0 : rnd.uniform(0, s));
      c[d] = rnd.uniform(-s, 2 * s);
    }
    const double dh = distanceSquaredToBox<RoundNearest>(c[0], c[1], c[2], l, h);
    const double dd = distanceSquaredToBox<DeviceRn>(c[0], c[1], c[2], l, h);
    rep.same(dh, dd, "random distance^2");
    // radii at the distance itself, and a hair either side: the decision must agree
    const double r0 = std::sqrt(dd);
    for (const double r : {r0, std::nextafter(r0, 0.0), std::nextafter(r0, INFINITY), rnd.uniform(0, 2 * s)}) {
      rep.expect(mac<RoundNearest>(c, r, l, h) == mac<DeviceRn>(c, r, l, h), fmt("random MAC at r = %.17g", r));
      rep.canary(mac<FusedRn>(c, r, l, h) != mac<DeviceRn>(c, r, l, h));
    }
    rep.canary(!sameBits(distanceSquaredToBox<FusedRn>(c[0], c[1], c[2], l, h), dd));
  }
}

// ---------------------------------------------------------------------------------------------------- images

struct ImageResult {
  bool usable = false, hoistable = false;
  double shifted[3] = {0, 0, 0};
  int image[3] = {0, 0, 0};
};
template <class Rn, class View>
ImageResult image(const View& v, const double* lo, const double* hi, const double* com, double R) {
  ImageResult r;
  r.usable = periodicNodeImage<Rn>(v, lo, hi, com, R, r.shifted, r.image, &r.hoistable);
  return r;
}
template <class View>
void sameImage(Report& rep, const View& v, const double* lo, const double* hi, const double* com, double R,
               const std::string& what) {
  const ImageResult a = image<RoundNearest>(v, lo, hi, com, R), b = image<DeviceRn>(v, lo, hi, com, R);
  rep.expect(a.usable == b.usable && a.hoistable == b.hoistable, what + ": usable/hoistable");
  for (int d = 0; d < 3; ++d) {
    rep.same(a.shifted[d], b.shifted[d], what + ": shifted");
    rep.expect(a.image[d] == b.image[d], what + ": image");
  }
  // in place (the CUDA walk shifts its com array in place)
  double inPlace[3] = {com[0], com[1], com[2]};
  int im[3];
  bool hoist = false;
  const bool ok = periodicNodeImage<DeviceRn>(v, lo, hi, inPlace, R, inPlace, im, &hoist);
  rep.expect(ok == b.usable && hoist == b.hoistable, what + ": in place, usable/hoistable");
  for (int d = 0; d < 3; ++d) rep.same(inPlace[d], b.shifted[d], what + ": in place, shifted");
  const ImageResult f = image<FusedRn>(v, lo, hi, com, R);
  bool differs = f.usable != b.usable || f.hoistable != b.hoistable;
  for (int d = 0; d < 3; ++d) differs = differs || !sameBits(f.shifted[d], b.shifted[d]) || f.image[d] != b.image[d];
  rep.canary(differs);
}

void checkImages(Report& rep) {
  const TestView v = periodicView(1.0, 1.0, 1.0);
  const double lo[3] = {0.25, 0.25, 0.25}, hi[3] = {0.75, 0.75, 0.75};  // centre 0.5, half-width 0.25
  // exactly half a period from the group's centre: rint ties to even, so the image is the node itself
  {
    const double com[3] = {0.0, 1.0, 0.5};  // separations +0.5, -0.5, 0
    const ImageResult r = image<DeviceRn>(v, lo, hi, com, 0.01);
    rep.expect(r.image[0] == 0 && r.image[1] == 0 && r.image[2] == 0, "half a period: ties to even, no shift");
    rep.same(r.shifted[0], 0.0, "half a period: x stays");
    rep.same(r.shifted[1], 1.0, "half a period: y stays");
    sameImage(rep, v, lo, hi, com, 0.01, "half a period");
  }
  // one and a half periods: the tie goes to 2 (even), and -1.5 to -2
  {
    const double com[3] = {-1.0, 2.0, 0.5};  // separations 1.5, -1.5
    const ImageResult r = image<RoundNearest>(v, lo, hi, com, 0.01);
    rep.expect(r.image[0] == 2 && r.image[1] == -2 && r.image[2] == 0, "1.5 periods: ties to even (2, -2)");
    rep.same(r.shifted[0], 1.0, "1.5 periods: x shifted by 2 periods");
    rep.same(r.shifted[1], 0.0, "1.5 periods: y shifted by -2 periods");
    sameImage(rep, v, lo, hi, com, 0.01, "1.5 periods");
  }
  // the far edge: far = max(hi - shifted, shifted - lo); usable iff far <= reach and P - far > R
  {
    const double com[3] = {0.75 - 0.5625, 0.5, 0.5};  // shifted 0.1875: far = 0.75 - 0.1875 = 0.5625 = reach
    rep.expect(image<RoundNearest>(v, lo, hi, com, 0.25).usable, "far == reach: usable");
    const double com2[3] = {0.1875 - std::ldexp(1.0, -52), 0.5, 0.5};  // far = reach + 2^-52 (representable)
    rep.expect(!image<RoundNearest>(v, lo, hi, com2, 0.25).usable, "far one ulp beyond reach: opened");
    // P - far = 0.4375 against R
    rep.expect(!image<RoundNearest>(v, lo, hi, com, 0.4375).usable, "P - far == R: opened");
    rep.expect(image<RoundNearest>(v, lo, hi, com, std::nextafter(0.4375, 0.0)).usable, "P - far just above R: usable");
    // hoistable: P - far > 2 R
    rep.expect(!image<RoundNearest>(v, lo, hi, com, 0.21875).hoistable, "P - far == 2R: not hoistable");
    rep.expect(image<RoundNearest>(v, lo, hi, com, std::nextafter(0.21875, 0.0)).hoistable,
               "P - far just above 2R: hoistable");
    sameImage(rep, v, lo, hi, com, 0.4375, "reach edge");
    sameImage(rep, v, lo, hi, com2, 0.25, "beyond reach");
  }
  // an isolated axis leaves the node where it is
  {
    const TestView w = periodicView(1.0, 0.0, 1.0);
    const double com[3] = {0.9, 37.0, 0.1};
    const ImageResult r = image<DeviceRn>(w, lo, hi, com, 0.01);
    rep.same(r.shifted[1], 37.0, "isolated axis: unchanged");
    rep.expect(r.image[1] == 0, "isolated axis: image 0");
    sameImage(rep, w, lo, hi, com, 0.01, "isolated axis");
  }
  // the cell image nearest a centre (the expanding walk's), ties and isolated axes
  {
    rep.same(imageNearCentre(0.0, 0.5, 1.0, 1.0), 0.0, "cell at half a period: ties to even");
    rep.same(imageNearCentre(0.0, 1.5, 1.0, 1.0), 2.0, "cell 1.5 periods away: 2 periods");
    rep.same(imageNearCentre(0.9, 0.1, 1.0, 1.0), 0.9 - 1.0, "cell 0.8 away: one period back");
    rep.same(imageNearCentre(123.0, 0.0, 0.0, 0.0), 123.0, "isolated: unchanged");
  }
  // hoisted image tags: shifts of -1..1 only; a tagged image is x + k P, rounded once
  {
    const int in[3] = {-1, 0, 1}, out[3] = {2, 0, 0};
    const unsigned t = hoistedImageTag(in);
    rep.expect(t == (kHoistedTag | 0u | (1u << 2) | (2u << 4)), "tag of (-1, 0, 1)");
    rep.expect(hoistedImageTag(out) == 0u, "no tag for a shift of 2");
    rep.same(taggedImage(0.25, t, 0, 1.0), -0.75, "tagged image x - P");
    rep.same(taggedImage(0.25, t, 2, 1.0), 1.25, "tagged image z + P");
    rep.same(taggedImage<DeviceRn>(0.1, t, 0, 0.3), taggedImage(0.1, t, 0, 0.3), "tagged image, both policies");
  }
  // which groups expand their correction: half-diagonal <= kEwaldExpansionSpacings table spacings (h / invUnit),
  // P/2 + e <= reach
  {
    static_assert(kEwaldExpansionSpacings == 3.5, "the extents below are exact binary fractions for 3.5 spacings");
    TestView w = periodicView(4.0, 4.0, 4.0);
    for (int d = 0; d < 3; ++d) {
      w.h[d] = 0.125;  // spacing 1/8: lim = 3.5 / 8 = 7/16, lim^2 = 196/1024
      w.reach[d] = 3.0;  // room beyond P/2 for the largest groups (the reach is tested below)
    }
    const double l0[3] = {0, 0, 0}, at[3] = {0.4375, 0.4375, 0.4375};  // e = 7/32 per axis: e2 = 147/1024
    const double edge[3] = {0.875, 0, 0};                                // e = 7/16: e2 = lim^2 exactly
    const double over[3] = {0.875, std::ldexp(1.0, -20), 0};
    rep.expect(ewaldGroupExpands(w, l0, at) && ewaldGroupExpands<DeviceRn>(w, l0, at), "expands: small group");
    rep.expect(ewaldGroupExpands(w, l0, edge) && ewaldGroupExpands<DeviceRn>(w, l0, edge),
               "expands: half-diagonal == 3.5 spacings");
    rep.expect(!ewaldGroupExpands(w, l0, over) && !ewaldGroupExpands<DeviceRn>(w, l0, over),
               "expands: a hair over 3.5 spacings, no");
    TestView tight = w;
    tight.reach[0] = 2.0 + 0.21875;  // P/2 + e = reach exactly for e = 7/32
    rep.expect(ewaldGroupExpands(tight, l0, at), "expands: P/2 + e == reach");
    tight.reach[0] = std::nextafter(2.21875, 0.0);
    rep.expect(!ewaldGroupExpands(tight, l0, at), "expands: P/2 + e just beyond reach, no");
  }
  // random sweep: boxes and nodes over several periods, anisotropic periods, some nodes at exact half periods
  Rand rnd(2);
  for (int it = 0; it < 100000; ++it) {
    // periods of any mantissa (a power of two would make P k exact, and contraction invisible)
    const double P0 = rnd.integer(0, 3) ? rnd.uniform(0.5, 2.0) * std::ldexp(1.0, rnd.integer(-3, 3)) : 1.0;
    const TestView w = periodicView(P0, rnd.integer(0, 3) ? P0 * 0.75 : 0.0, P0 * rnd.uniform(0.5, 2.0));
    double l[3], h[3], com[3];
    for (int d = 0; d < 3; ++d) {
      const double P = w.period[d] > 0 ? w.period[d] : P0;
      l[d] = rnd.coordinate(P);
      h[d] = l[d] + rnd.uniform(0, P / 8);
      const double c = 0.5 * (l[d] + h[d]);
      com[d] = rnd.integer(0, 5) == 0 ? c + (rnd.integer(-3, 3) + 0.5) * P : rnd.uniform(-2 * P, 3 * P);
    }
    const double R = rnd.uniform(0, P0 / 2);
    sameImage(rep, w, l, h, com, R, "random image");
    // the expansion test at random spacings, some near the boundary (e2 ~ lim^2)
    TestView x = w;
    const double sp = rnd.uniform(0.01, 0.2) * P0;
    for (int d = 0; d < 3; ++d) x.h[d] = sp * (1 + d * 0.25), x.invUnit = rnd.uniform(0.5, 2.0);
    double gh[3];
    const double lim = sp / x.invUnit, target = rnd.uniform(0.9, 1.1) * lim;  // half-diagonal near the limit
    for (int d = 0; d < 3; ++d) gh[d] = l[d] + 2 * target / std::sqrt(3.0) * rnd.uniform(0.95, 1.05);
    rep.expect(ewaldGroupExpands(x, l, gh) == ewaldGroupExpands<DeviceRn>(x, l, gh), "random expansion test");
    rep.canary(ewaldGroupExpands<FusedRn>(x, l, gh) != ewaldGroupExpands<DeviceRn>(x, l, gh));
    for (int d = 0; d < 3; ++d) {
      const double x = rnd.uniform(-3 * P0, 3 * P0), c = rnd.uniform(0, P0);
      rep.same(imageNearCentre(x, c, w.period[d], w.invPeriod[d]),
               imageNearCentre<DeviceRn>(x, c, w.period[d], w.invPeriod[d]), "random cell image");
      rep.canary(!sameBits(imageNearCentre<FusedRn>(x, c, w.period[d], w.invPeriod[d]),
                           imageNearCentre<DeviceRn>(x, c, w.period[d], w.invPeriod[d])));
    }
  }
}

// ---------------------------------------------------------------------------------------------------- moments

/// One node's moments from its cells (a leaf) or children, with the rules of physics/moments_k.h in the order the
/// host's sweep and the device's kernel call them.
struct Node {
  double m = 0, a = 0, com[3] = {0, 0, 0}, q[6] = {0, 0, 0, 0, 0, 0}, D[3] = {0, 0, 0}, S = 0;
  double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, macRadius = 0;
};
struct Cell {
  double x, y, z, m, size;
};

template <class Rn>
Node leafNode(const std::vector<Cell>& cells, bool bonsai, bool sgn, double side, const double* centre, double theta) {
  NodeSums s = emptyNodeSums();
  for (const Cell& c : cells) addCellToSums<Rn>(s, c.x, c.y, c.z, c.m, c.size, sgn);
  Node n;
  double l, ctr[3];
  macFrame<Rn>(bonsai, s, side, centre, l, ctr);
  expansionCentre<Rn>(s, sgn, ctr, centre, n.com);
  for (const Cell& c : cells) {
    const double p[3] = {c.x, c.y, c.z};
    double d[3];
    offsetFrom<Rn>(p, n.com, d);
    addQuadrupole<Rn>(n.q, c.m, d[0], d[1], d[2]);
    n.S = addCellSecondMoment<Rn>(n.S, c.m, d);
    if (sgn) addCellDipole<Rn>(n.D, c.m, d);
  }
  n.m = s.M;
  n.a = nodeWeight(s, sgn);
  for (int d = 0; d < 3; ++d) {
    n.lo[d] = s.lo[d];
    n.hi[d] = s.hi[d];
  }
  n.macRadius = nodeMacRadius<Rn>(l, theta, s.M, n.a, sgn, n.D, n.com, ctr);
  return n;
}

template <class Rn>
Node parentNode(const std::vector<Node>& kids, bool bonsai, bool sgn, double side, const double* centre, double theta) {
  NodeSums s = emptyNodeSums();
  for (const Node& k : kids) addChildToSums<Rn>(s, k.m, k.a, k.com, k.lo, k.hi, sgn);
  Node n;
  double l, ctr[3];
  macFrame<Rn>(bonsai, s, side, centre, l, ctr);
  expansionCentre<Rn>(s, sgn, ctr, centre, n.com);
  for (const Node& k : kids) {
    double off[3];
    offsetFrom<Rn>(k.com, n.com, off);
    addChildQuadrupole<Rn>(n.q, k.q, k.m, off);
    n.S = addChildSecondMoment<Rn>(n.S, k.S, k.m, off);
    if (sgn) {
      const double ds = dipoleDot<Rn>(k.D, off);
      addDipoleShift<Rn>(n.q, k.D, off, ds);
      addChildDipole<Rn>(n.D, k.D, k.m, off);
      n.S = addDipoleSecondMoment<Rn>(n.S, ds);
    }
  }
  n.m = s.M;
  n.a = nodeWeight(s, sgn);
  for (int d = 0; d < 3; ++d) {
    n.lo[d] = s.lo[d];
    n.hi[d] = s.hi[d];
  }
  n.macRadius = nodeMacRadius<Rn>(l, theta, s.M, n.a, sgn, n.D, n.com, ctr);
  return n;
}

/// Every field bit for bit; returns whether all agree (for the canary).
bool sameNode(Report* rep, const Node& a, const Node& b, const std::string& what) {
  bool all = true;
  auto one = [&](double x, double y, const char* f) {
    const bool ok = sameBits(x, y);
    all = all && ok;
    if (rep) rep->same(x, y, what + ": " + f);
  };
  one(a.m, b.m, "mass");
  one(a.a, b.a, "weight");
  for (int d = 0; d < 3; ++d) one(a.com[d], b.com[d], "com");
  for (int r = 0; r < 6; ++r) one(a.q[r], b.q[r], "quadrupole");
  for (int d = 0; d < 3; ++d) one(a.D[d], b.D[d], "dipole");
  one(a.S, b.S, "S");
  for (int d = 0; d < 3; ++d) {
    one(a.lo[d], b.lo[d], "extent lo");
    one(a.hi[d], b.hi[d], "extent hi");
  }
  one(a.macRadius, b.macRadius, "macRadius");
  return all;
}

template <class Fn>
void bothPolicies(Report& rep, Fn fn, const std::string& what) {
  const Node h = fn(RoundNearest{}), d = fn(DeviceRn{});
  sameNode(&rep, h, d, what);
  rep.canary(!sameNode(nullptr, fn(FusedRn{}), d, what));
}

void checkMoments(Report& rep) {
  const double centre[3] = {0.5, 0.5, 0.5};
  // the node cube: side and centre from the root
  rep.same(nodeCubeSide(1.0, 3), 0.125, "cube side at level 3");
  rep.same(nodeCubeCentre(-1.0, 5, 0.25), 0.375, "cube centre -1 + 5.5/4");
  rep.expect(nodeSplits(17, 3, 16) && !nodeSplits(16, 3, 16) && !nodeSplits(1000, kKeyBits, 16), "split rule");
  // one cell: com at the cell, no quadrupole, R = l/theta + |com - centre| (hand-checked: 2 + 0.25)
  {
    const std::vector<Cell> one = {{0.25, 0.5, 0.5, 2.0, 0.125}};
    const Node n = leafNode<DeviceRn>(one, false, false, 1.0, centre, 0.5);
    rep.same(n.macRadius, 2.25, "one cell: R = 1/0.5 + 0.25");
    rep.same(n.com[0], 0.25, "one cell: com");
    rep.expect(n.q[0] == 0 && n.q[1] == 0 && n.S == 0, "one cell: no quadrupole, S 0");
    rep.same(n.lo[0], 0.1875, "one cell: extent lo = x - size/2");
    bothPolicies(rep, [&](auto rn) { return leafNode<decltype(rn)>(one, false, false, 1.0, centre, 0.5); }, "one cell");
  }
  // zero mass: the empty marker, which every walk skips
  {
    const std::vector<Cell> none = {{0.25, 0.5, 0.5, 0.0, 0.125}, {0.75, 0.5, 0.5, 0.0, 0.125}};
    const Node n = leafNode<RoundNearest>(none, false, false, 1.0, centre, 0.5);
    rep.expect(n.macRadius == kEmptyNodeMacRadius && nodeIsEmpty(n.macRadius), "massless leaf: R = -1");
    rep.expect(n.com[0] == 0.5, "massless leaf: com at the cube's centre");
    const Node s = leafNode<RoundNearest>(none, false, true, 1.0, centre, 0.5);
    rep.expect(nodeIsEmpty(s.macRadius), "signed massless leaf: R = -1");
    bothPolicies(rep, [&](auto rn) { return leafNode<decltype(rn)>(none, true, true, 1.0, centre, 0.5); }, "massless");
  }
  // signed masses summing to zero: not empty (sum |m| = 2), centred on the MAC's centre, delta = |D| / sum |m|
  {
    const std::vector<Cell> pm = {{0.25, 0.5, 0.5, 1.0, 0.125}, {0.75, 0.5, 0.5, -1.0, 0.125}};
    const Node n = leafNode<DeviceRn>(pm, false, true, 1.0, centre, 0.5);
    rep.same(n.m, 0.0, "+-1: mass 0");
    rep.same(n.a, 2.0, "+-1: sum |m| 2");
    rep.same(n.com[0], 0.5, "+-1: centred on the cube");
    rep.same(n.D[0], -0.5, "+-1: dipole -0.5");
    rep.same(n.macRadius, 2.25, "+-1: R = 2 + 0.5 / 2");
    bothPolicies(rep, [&](auto rn) { return leafNode<decltype(rn)>(pm, false, true, 1.0, centre, 0.5); }, "+-1");
    // positive masses only: the signed delta is |com - centre|, as Barnes'
    const std::vector<Cell> pp = {{0.25, 0.5, 0.5, 1.0, 0.125}, {0.375, 0.5, 0.5, 3.0, 0.125}};
    const Node u = leafNode<DeviceRn>(pp, false, false, 1.0, centre, 0.5);
    const Node s = leafNode<DeviceRn>(pp, false, true, 1.0, centre, 0.5);
    rep.same(u.com[0], 0.34375, "1 and 3: com (0.25 + 3 x 0.375) / 4");
    rep.same(s.macRadius, u.macRadius, "signed delta = Barnes' delta when no mass is negative");
  }
  // Bonsai: the tight box's longest side and centre (ties: the first)
  {
    const std::vector<Cell> box = {{0.25, 0.25, 0.5, 1.0, 0.125}, {0.5, 0.5, 0.5, 1.0, 0.125}};
    const Node n = leafNode<DeviceRn>(box, true, false, 1.0, centre, 0.5);
    // extents x, y: [0.1875, 0.5625] (0.375), z: [0.4375, 0.5625]; l = 0.375, ctr (0.375, 0.375, 0.5)
    rep.same(n.macRadius, 0.75, "Bonsai: R = 0.375 / 0.5 + |com - ctr| (com = ctr)");
  }
  // the parallel-axis theorem: a parent of two leaves equals one leaf of all their cells (dyadic: exact)
  for (const bool sgn : {false, true}) {
    const std::vector<Cell> a = {{0.125, 0.25, 0.375, 1.0, 0.125}, {0.25, 0.125, 0.375, 3.0, 0.125}};
    const std::vector<Cell> b = {{0.625, 0.75, 0.5, sgn ? -2.0 : 2.0, 0.125}, {0.75, 0.625, 0.875, 2.0, 0.125}};
    std::vector<Cell> all = a;
    all.insert(all.end(), b.begin(), b.end());
    const double ca[3] = {0.25, 0.25, 0.25}, cb[3] = {0.75, 0.75, 0.75};
    const Node p = parentNode<DeviceRn>({leafNode<DeviceRn>(a, false, sgn, 0.5, ca, 0.5),
                                         leafNode<DeviceRn>(b, false, sgn, 0.5, cb, 0.5)},
                                        false, sgn, 1.0, centre, 0.5);
    const Node d = leafNode<DeviceRn>(all, false, sgn, 1.0, centre, 0.5);
    sameNode(&rep, p, d, sgn ? "parallel axis, signed (dipole shift, + 2 D.s)" : "parallel axis");
    bothPolicies(rep, [&](auto rn) {
      using Rn = decltype(rn);
      return parentNode<Rn>({leafNode<Rn>(a, false, sgn, 0.5, ca, 0.5), leafNode<Rn>(b, false, sgn, 0.5, cb, 0.5)},
                            false, sgn, 1.0, centre, 0.5);
    }, "parallel axis parent");
  }
  // denormal masses, huge coordinates (q and S overflow), and the density contrast's mass
  {
    const std::vector<Cell> tiny = {{0.25, 0.5, 0.5, 1e-310, 0.125}, {0.5, 0.25, 0.5, 3e-315, 0.125}};
    bothPolicies(rep, [&](auto rn) { return leafNode<decltype(rn)>(tiny, false, false, 1.0, centre, 0.5); },
                 "denormal masses");
    bothPolicies(rep, [&](auto rn) { return leafNode<decltype(rn)>(tiny, true, true, 1.0, centre, 0.5); },
                 "denormal signed masses");
    const Node t = leafNode<DeviceRn>(tiny, false, false, 1.0, centre, 0.5);
    rep.expect(t.m > 0 && !nodeIsEmpty(t.macRadius), "denormal masses: not empty");
    const double big[3] = {1e150, 1e150, 1e150};
    const std::vector<Cell> huge = {{1e160, -1e160, 3e159, 1e30, 1e150}, {-2e160, 1e155, 1e160, 2e30, 1e150}};
    bothPolicies(rep, [&](auto rn) { return leafNode<decltype(rn)>(huge, false, false, 1e161, big, 0.5); },
                 "huge coordinates");
    rep.same(contrastMass(1.0, 0.5, 0.5), 0.9375, "contrast mass 1 - 0.5 x 0.125");
    rep.same(contrastMass(1e-320, 1e-300, 1e-7), contrastMass<DeviceRn>(1e-320, 1e-300, 1e-7), "contrast denormals");
  }
  // random sweep: random leaves under random parents, both MACs, signed and not
  Rand rnd(3);
  for (int it = 0; it < 20000; ++it) {
    const bool bonsai = rnd.integer(0, 1), sgn = rnd.integer(0, 1);
    const double side = std::ldexp(1.0, rnd.integer(-10, 10));
    const double c0[3] = {rnd.uniform(0, side), rnd.uniform(0, side), rnd.uniform(0, side)};
    const double theta = rnd.uniform(0.2, 1.0);
    std::vector<std::vector<Cell>> leaves(rnd.integer(1, 8));
    for (auto& cells : leaves) {
      cells.resize(rnd.integer(1, 16));
      for (Cell& c : cells) {
        c = Cell{c0[0] + rnd.uniform(-side, side), c0[1] + rnd.uniform(-side, side), c0[2] + rnd.uniform(-side, side),
                 sgn ? rnd.scaled() : std::fabs(rnd.scaled()), side * std::ldexp(1.0, -rnd.integer(2, 6))};
        if (rnd.integer(0, 15) == 0) c.m = 0;
      }
    }
    auto build = [&](auto rn) {
      using Rn = decltype(rn);
      std::vector<Node> kids;
      for (const auto& cells : leaves) kids.push_back(leafNode<Rn>(cells, bonsai, sgn, side / 2, c0, theta));
      return parentNode<Rn>(kids, bonsai, sgn, side, c0, theta);
    };
    bothPolicies(rep, build, "random node");
    const double m = rnd.scaled(), rho = std::fabs(rnd.scaled()), sz = std::fabs(rnd.scaled());
    rep.same(contrastMass(m, rho, sz), contrastMass<DeviceRn>(m, rho, sz), "random contrast mass");
  }
}

// ---------------------------------------------------------------------------------------------------- the LET choice

void checkLetAccept(Report& rep) {
  const TestView v = periodicView(1.0, 1.0, 1.0);
  const double lo[3] = {0.25, 0.25, 0.25}, hi[3] = {0.5, 0.5, 0.5}, inf[3] = {INFINITY, INFINITY, INFINITY};
  const double W[3] = {0.03125, 0.03125, 0.03125};
  {
    const double com[3] = {0.875, 0.875, 0.875};  // 0.375 beyond the box, 0.625 around the other way
    rep.expect(periodicBoxAccepts(v, com, 0.05, lo, hi, W), "LET: a small far node travels childless");
    // (0.375 per axis beyond the box either way round; its other images P - 0.53125 away)
    rep.expect(periodicBoxAccepts(v, com, 0.4, lo, hi, W), "LET: R 0.4 < 0.65 away travels childless");
    rep.expect(!periodicBoxAccepts(v, com, 0.7, lo, hi, W), "LET: a large node is opened");
    const double inside[3] = {0.375, 0.375, 0.375};
    rep.expect(!periodicBoxAccepts(v, inside, 0.0, lo, hi, inf), "LET: a node inside the box is opened");
  }
  Rand rnd(4);
  for (int it = 0; it < 50000; ++it) {
    const double P0 = rnd.integer(0, 3) ? rnd.uniform(0.5, 2.0) * std::ldexp(1.0, rnd.integer(-2, 2)) : 1.0;
    const TestView w = periodicView(P0, rnd.integer(0, 3) ? P0 : 0.0, P0 * rnd.uniform(0.4, 1.0));
    double l[3], h[3], com[3], hw[3];
    for (int d = 0; d < 3; ++d) {
      const double P = w.period[d] > 0 ? w.period[d] : P0;
      l[d] = rnd.coordinate(P);
      h[d] = l[d] + rnd.uniform(0, P / 2);
      com[d] = rnd.integer(0, 5) == 0 ? l[d] + (rnd.integer(-2, 2) + 0.5) * P : rnd.uniform(-P, 2 * P);
      hw[d] = rnd.integer(0, 4) == 0 ? INFINITY : rnd.uniform(0, P / 16);
    }
    const double R = rnd.uniform(0, P0 / 4);
    const bool a = periodicBoxAccepts(w, com, R, l, h, hw), b = periodicBoxAccepts<DeviceRn>(w, com, R, l, h, hw);
    rep.expect(a == b, fmt("random LET acceptance, R %.17g", R));
    rep.canary(periodicBoxAccepts<FusedRn>(w, com, R, l, h, hw) != b);
  }
}

/// A receiving rank's box of target centres (sometimes flat along an axis), at times far from the origin.
RankSummary randomReceiverBox(Rand& rnd) {
  const double offset = rnd.integer(0, 3) == 0 ? std::ldexp(1.0, rnd.integer(0, 20)) : 0.0;
  RankSummary sum{};
  for (int d = 0; d < 3; ++d) {
    sum.centreLo[d] = offset + rnd.coordinate(1.0);
    sum.centreHi[d] = sum.centreLo[d] + (rnd.integer(0, 5) == 0 ? 0.0 : rnd.uniform(0, 0.5));
  }
  return sum;
}

/// A node centre just beyond `grown` by `reach` (times 1 + 2^-k): past a face, an edge or a corner (the hardest
/// cases), or in any direction from the box's middle.
void nodeJustBeyond(Rand& rnd, const RemoteBox& grown, double reach, double com[3]) {
  const bool edge = rnd.integer(0, 1) == 0;
  double dir[3], norm = 0;
  for (int d = 0; d < 3; ++d) {
    dir[d] = edge ? double(rnd.integer(-1, 1)) : rnd.uniform(-1, 1);
    norm += dir[d] * dir[d];
  }
  if (norm == 0) { dir[0] = 1; norm = 1; }
  norm = std::sqrt(norm);
  const double beyond = reach * (1 + std::ldexp(1.0, -rnd.integer(10, 52)));
  for (int d = 0; d < 3; ++d) {
    const double u = dir[d] / norm;
    if (edge) com[d] = u > 0 ? grown.hi[d] + u * beyond : u < 0 ? grown.lo[d] + u * beyond
                                                               : rnd.uniform(grown.lo[d], grown.hi[d]);
    else com[d] = 0.5 * (grown.lo[d] + grown.hi[d]) + u * (0.5 * (grown.hi[d] - grown.lo[d]) + beyond);
  }
}

/// Three group boxes inside the receiver's real box: the box itself, its point nearest `com`, a random sub-box.
void groupBoxesInside(Rand& rnd, const RankSummary& sum, const double com[3], double glo[3][3], double ghi[3][3]) {
  for (int d = 0; d < 3; ++d) {
    glo[0][d] = sum.centreLo[d];
    ghi[0][d] = sum.centreHi[d];
    glo[1][d] = ghi[1][d] = std::min(std::max(com[d], sum.centreLo[d]), sum.centreHi[d]);
    const double a = rnd.uniform(sum.centreLo[d], sum.centreHi[d]), b = rnd.uniform(sum.centreLo[d], sum.centreHi[d]);
    glo[2][d] = std::max(sum.centreLo[d], std::min(a, b));
    ghi[2][d] = std::min(sum.centreHi[d], std::max(a, b));
  }
}

/// Particles under MPI (issue #18): a node that a LET sends childless for a rank with softened targets (chosen for
/// the rank's box grown by let/let.h remoteBoxFor) must pass the spline kernel's softening rule for every group box
/// inside the real box, with either rounding: the receiver takes such a node untested. Nodes placed just beyond the
/// grown box's faces, edges and corners (the hardest cases) and at random; boxes far from the origin. The canary:
/// without the growth some accepted nodes must fail the rule, or passing would prove nothing. (A growth of exactly
/// the reach, without remoteBoxFor's margin, fails here at a few rounding edges.)
void checkSoftLet(Report& rep) {
  Rand rnd(18);
  long ungrownFailures = 0;
  for (int it = 0; it < 200000; ++it) {
    RankSummary sum = randomReceiverBox(rnd);
    const double eps = std::ldexp(rnd.uniform(0.5, 1.0), rnd.integer(-14, -3));
    sum.softReach = kSplineRadius * eps;
    const RemoteBox grown = remoteBoxFor(sum);
    // the node: its MAC radius, and a centre just beyond the grown box (a face, an edge or a corner) or anywhere
    const double macR = std::ldexp(rnd.uniform(0.5, 1.0), rnd.integer(-12, -1));
    double com[3];
    nodeJustBeyond(rnd, grown, macR, com);
    // group boxes inside the real box: the box itself, the point of it nearest the node, a random sub-box
    double glo[3][3], ghi[3][3];
    groupBoxesInside(rnd, sum, com, glo, ghi);
    const double groupMax = rnd.integer(0, 1) ? eps : eps * rnd.uniform(0, 1);
    if (macAccepts(com[0], com[1], com[2], macR, grown.lo, grown.hi)) {
      for (int g = 0; g < 3; ++g) {
        const bool host = softeningAccepts(SofteningKernel::Spline, distanceSquaredToBox(com[0], com[1], com[2],
                                           glo[g], ghi[g]), macR, 0.0, groupMax, 0.0, 0.0);
        const bool device = softeningAccepts<DeviceRn>(SofteningKernel::Spline,
                                                       distanceSquaredToBox<DeviceRn>(com[0], com[1], com[2], glo[g],
                                                                                      ghi[g]), macR, 0.0, groupMax,
                                                       0.0, 0.0);
        rep.expect(host && device, fmt("a node sent childless for the grown box fails the softening rule (eps %.17g, "
                                       "macRadius %.17g, group %g)", eps, macR, g));
      }
    }
    // the canary: the same node chosen for the box without the growth
    RankSummary bare = sum;
    bare.softReach = 0;
    const RemoteBox b = remoteBoxFor(bare);
    if (macAccepts(com[0], com[1], com[2], macR, b.lo, b.hi) &&
        !softeningAccepts(SofteningKernel::Spline, distanceSquaredToBox(com[0], com[1], com[2], glo[1], ghi[1]), macR,
                          0.0, eps, 0.0, 0.0))
      ++ungrownFailures;
  }
  rep.expect(ungrownFailures > 0, "canary: without the growth some nodes sent childless fail the softening rule");
  std::printf("  LET for softened targets: without the growth %ld nodes would be sent childless and fail\n",
              ungrownFailures);
}

/// Particle LETs (issue #18): a particle node that let/let.h essentialParticlesFor sends childless
/// (physics/let_accept_k.h particleBoxAccepts, for the receiver's box grown by remoteBoxFor) must pass the receiver's
/// softened walk for every group box inside the real box whose softenings lie in the receiver's range [softMin,
/// softReach / kSplineRadius]: the MAC and softeningAccepts with the node's extent and softening range, both
/// kernels, either rounding. Nodes just beyond the reach of the grown box (faces, edges, corners) and at random. The
/// canaries: chosen without the growth (spline) or with the node's largest softening as the receiver's smallest
/// (Plummer), some accepted nodes must fail the receiver's rule.
void checkParticleLet(Report& rep) {
  Rand rnd(1818);
  long splineCanary = 0, plummerCanary = 0;
  for (int it = 0; it < 200000; ++it) {
    const SofteningKernel kernel = it % 2 ? SofteningKernel::Plummer : SofteningKernel::Spline;
    RankSummary sum = randomReceiverBox(rnd);
    // the receiver's softenings [gLo, gHi] (0, 0: cells or probes only)
    const double gHi = rnd.integer(0, 3) == 0 ? 0.0 : std::ldexp(rnd.uniform(0.5, 1.0), rnd.integer(-14, -3));
    const double gLo = rnd.integer(0, 1) ? 0.0 : gHi * rnd.uniform(0, 1);
    sum.softReach = kernel == SofteningKernel::Spline ? kSplineRadius * gHi : 0.0;
    sum.softMin = gLo;
    const RemoteBox grown = remoteBoxFor(sum);
    // the node: MAC radius, extent, softening range (often one value: Plummer's easy case), and a centre just beyond
    // the grown box by the larger of its MAC radius and its own spline reach
    const double macR = std::ldexp(rnd.uniform(0.5, 1.0), rnd.integer(-12, -1));
    const double extent = macR * rnd.uniform(0.2, 0.9);
    const double nHi = std::ldexp(rnd.uniform(0.5, 1.0), rnd.integer(-14, -3));
    const double nLo = rnd.integer(0, 2) == 0 ? nHi : nHi * rnd.uniform(0.1, 1);
    const double need = std::max(macR, kSplineRadius * nHi + extent);
    double com[3];
    nodeJustBeyond(rnd, grown, need, com);
    double glo[3][3], ghi[3][3];  // the box itself, its point nearest the node, a random sub-box
    groupBoxesInside(rnd, sum, com, glo, ghi);
    const double groupMin = gLo + (gHi - gLo) * rnd.uniform(0, 1) * (rnd.integer(0, 1) ? 0.0 : 1.0);
    const double groupMax = std::max(groupMin, rnd.integer(0, 1) ? gHi : gHi * rnd.uniform(0, 1));
    if (particleBoxAccepts(kernel, com, macR, extent, nLo, nHi, grown.softMin, grown.lo, grown.hi)) {
      for (int g = 0; g < 3; ++g) {
        const bool host = macAccepts(com[0], com[1], com[2], macR, glo[g], ghi[g]) &&
                          softeningAccepts(kernel, distanceSquaredToBox(com[0], com[1], com[2], glo[g], ghi[g]),
                                           extent, groupMin, groupMax, nLo, nHi);
        const bool device = macAccepts<DeviceRn>(com[0], com[1], com[2], macR, glo[g], ghi[g]) &&
                            softeningAccepts<DeviceRn>(kernel, distanceSquaredToBox<DeviceRn>(com[0], com[1], com[2],
                                                                                             glo[g], ghi[g]),
                                                       extent, groupMin, groupMax, nLo, nHi);
        rep.expect(host && device, fmt("a particle node sent childless fails the receiver's walk (node eps max %.17g, "
                                       "extent %.17g, group eps max %.17g)", nHi, extent, groupMax));
      }
    }
    // the canaries: chosen without the receiver's reach (spline) or its smallest softening (Plummer)
    RankSummary bare = sum;
    bare.softReach = 0;
    bare.softMin = nHi;  // as if every target of the receiver were softened at least as much as the node
    const RemoteBox b = remoteBoxFor(bare);
    if (particleBoxAccepts(kernel, com, macR, extent, nLo, nHi, b.softMin, b.lo, b.hi) &&
        !softeningAccepts(kernel, distanceSquaredToBox(com[0], com[1], com[2], glo[1], ghi[1]), extent, gLo, gHi, nLo,
                          nHi))
      ++(kernel == SofteningKernel::Spline ? splineCanary : plummerCanary);
  }
  rep.expect(splineCanary > 0 && plummerCanary > 0,
             "canaries: chosen without the receiver's softenings some particle nodes fail the receiver's rule");
  std::printf("  particle LETs: without the receiver's softenings %ld (spline) and %ld (plummer) nodes would be sent "
              "childless and fail\n", splineCanary, plummerCanary);
}

/// The spline rule's source extent (physics/softening_k.h leafExtent, childExtent; tree/particle_tree.cpp on the
/// host, cuda/kernel_particles.cu on the device): the host's and the device's rounding give the same bits, and the
/// result bounds the true distance (long double) of every point it stands for: a leaf's points from its centre,
/// and a point within a child's extent of the child's centre from the parent's. Coordinates far from the origin
/// (cancellation in the differences) and at every scale; the spline rule with the extent decides alike too.
void checkExtent(Report& rep) {
  using LD = long double;
  Rand rnd(1802);
  auto trueDistance = [](const double* p, const double* c) {
    const LD dx = LD(p[0]) - c[0], dy = LD(p[1]) - c[1], dz = LD(p[2]) - c[2];
    return std::sqrt(dx * dx + dy * dy + dz * dz);
  };
  long beyond = 0;
  for (int it = 0; it < 100000; ++it) {
    const double offset = rnd.integer(0, 2) == 0 ? std::ldexp(rnd.uniform(1, 2), rnd.integer(0, 30)) : 0.0;
    const double spread = std::ldexp(1.0, rnd.integer(-40, 4));
    double com[3], pc[3];
    for (int d = 0; d < 3; ++d) {
      com[d] = offset + rnd.uniform(-spread, spread);
      pc[d] = offset + rnd.uniform(-spread, spread);
    }
    // a leaf of k points about com
    const int k = rnd.integer(1, 16);
    double d2h = 0, d2d = 0, d2f = 0;
    std::vector<double> pts(3 * k);
    for (int j = 0; j < k; ++j) {
      double* q = &pts[3 * j];
      for (int d = 0; d < 3; ++d) q[d] = rnd.integer(0, 9) == 0 ? com[d] : offset + rnd.uniform(-spread, spread);
      d2h = stdMax(d2h, extentDistance2(q[0], q[1], q[2], com));
      d2d = stdMax(d2d, extentDistance2<DeviceRn>(q[0], q[1], q[2], com));
      d2f = stdMax(d2f, extentDistance2<FusedRn>(q[0], q[1], q[2], com));
    }
    const double bh = leafExtent(d2h), bd = leafExtent<DeviceRn>(d2d);
    rep.same(bh, bd, "leaf extent");
    rep.canary(leafExtent<FusedRn>(d2f) != bd);
    for (int j = 0; j < k; ++j)
      if (trueDistance(&pts[3 * j], com) > LD(bh)) ++beyond;
    // the leaf as a child of a node centred at pc: each point within the child's bound of pc
    const double ch = childExtent(com, bh, pc), cd = childExtent<DeviceRn>(com, bd, pc);
    rep.same(ch, cd, "child extent");
    rep.canary(childExtent<FusedRn>(com, bd, pc) != cd);
    for (int j = 0; j < k; ++j)
      if (trueDistance(&pts[3 * j], pc) > LD(ch)) ++beyond;
    // a point exactly at the child's bound (the worst case of the triangle inequality): along pc -> com, beyond com
    {
      const LD D = trueDistance(com, pc);
      if (D > 0) {
        double q[3];
        for (int d = 0; d < 3; ++d) q[d] = double(LD(com[d]) + (LD(com[d]) - pc[d]) / D * LD(bh) * 0.999999L);
        if (trueDistance(q, com) <= LD(bh) && trueDistance(q, pc) > LD(ch)) ++beyond;
      }
    }
    // the spline rule with the extent: host and device decide alike
    const double glo[3] = {pc[0] - spread / 4, pc[1] - spread / 4, pc[2] - spread / 4};
    const double ghi[3] = {pc[0] + spread / 4, pc[1] + spread / 4, pc[2] + spread / 4};
    const double eps = std::ldexp(rnd.uniform(0.5, 1.0), rnd.integer(-45, 2));
    const bool a = softeningAccepts(SofteningKernel::Spline, distanceSquaredToBox(com[0], com[1], com[2], glo, ghi),
                                    bh, 0.0, eps, 0.0, eps);
    const bool b = softeningAccepts<DeviceRn>(SofteningKernel::Spline,
                                              distanceSquaredToBox<DeviceRn>(com[0], com[1], com[2], glo, ghi), bd,
                                              0.0, eps, 0.0, eps);
    rep.expect(a == b, fmt("spline rule with the extent %.17g, eps %.17g", bh, eps));
  }
  rep.expect(beyond == 0, fmt("%g points beyond their extent", double(beyond)));
  // hand-checked: one point at distance 5 (3-4-0): b just above 5, within 2^-49 of it
  const double c0[3] = {0, 0, 0}, p5[3] = {3, 4, 0};
  const double b5 = leafExtent(extentDistance2(p5[0], p5[1], p5[2], c0));
  rep.expect(b5 > 5.0 && b5 < 5.0 * (1 + 0x1p-49), fmt("3-4-5: b = %.17g", b5));
  rep.same(leafExtent(0.0), 0.0, "a single point at the com: b = 0");
}

// ---------------------------------------------------------------------------------------------------- the core library

/// AMR-like cells: a 12^3 grid of side 1 with one octant refined twice (cells of side 1/24 and 1/48), masses
/// positive (random) or, for the density contrast, made signed by the core's applyDensityContrast.
struct AmrCells {
  std::vector<double> x, y, z, m, s;
};
AmrCells amrCells(std::uint64_t seed) {
  AmrCells c;
  Rand rnd(seed);
  auto add = [&](double x, double y, double z, double size) {
    c.x.push_back(x);
    c.y.push_back(y);
    c.z.push_back(z);
    c.s.push_back(size);
    c.m.push_back(size * size * size * rnd.uniform(0.5, 2.0));
  };
  const int n = 12;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) {
        const double h = 1.0 / n, cx = (i + 0.5) * h, cy = (j + 0.5) * h, cz = (k + 0.5) * h;
        if (i < n / 2 && j < n / 2 && k < n / 2) {  // refined octant: 8 children, one of them refined again
          for (int o = 0; o < 8; ++o) {
            const double ox = cx + ((o & 1) ? 0.25 : -0.25) * h, oy = cy + ((o & 2) ? 0.25 : -0.25) * h;
            const double oz = cz + ((o & 4) ? 0.25 : -0.25) * h;
            if (o == 0 && (i + j + k) % 3 == 0) {
              for (int p = 0; p < 8; ++p)
                add(ox + ((p & 1) ? 0.125 : -0.125) * h, oy + ((p & 2) ? 0.125 : -0.125) * h,
                    oz + ((p & 4) ? 0.125 : -0.125) * h, h / 4);
            } else {
              add(ox, oy, oz, h / 2);
            }
          }
        } else {
          add(cx, cy, cz, h);
        }
      }
  return c;
}

void checkCore(Report& rep) {
  const AmrCells amr = amrCells(5);
  CellsView view;
  view.x = amr.x.data();
  view.y = amr.y.data();
  view.z = amr.z.data();
  view.mass = amr.m.data();
  view.size = amr.s.data();
  view.n = amr.x.size();
  for (int variant = 0; variant < 4; ++variant) {
    const bool bonsai = variant & 1, sgn = variant & 2;
    const std::string what = std::string(bonsai ? "Bonsai" : "Barnes") + (sgn ? ", density contrast" : "");
    SolveOptions opt;
    opt.mac = bonsai ? MacKind::Bonsai : MacKind::Barnes;
    opt.theta = 0.6;
    opt.leafSize = 8;
    opt.hasBox = sgn;  // the contrast needs the periodic box; without a box the root cube is the cells' bounds
    for (int d = 0; d < 3; ++d) {
      opt.boxLo[d] = 0;
      opt.boxHi[d] = 1;
      opt.periodic[d] = sgn;
    }
    opt.densityContrast = sgn;
    // the root cube: the host's chooseRootCube against the device's bounds reduction (min/max of x -+ h)
    RootCube root = chooseRootCube(view, opt);
    if (!opt.hasBox) {
      double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
      const double* p[3] = {view.x, view.y, view.z};
      for (std::size_t i = 0; i < view.n; ++i) {
        const double h = cellHalfSize<DeviceRn>(view.size[i]);
        for (int d = 0; d < 3; ++d) growByCell<DeviceRn>(lo[d], hi[d], p[d][i], h);
      }
      for (int d = 0; d < 3; ++d) rep.same(root.lo[d], lo[d], what + ": root cube lo");
    }
    SortedCells cells;
    std::vector<std::uint64_t> keys;
    Octree tree;
    rep.expect(sortCellsByKey(view, root, cells, keys).ok(), what + ": sort");
    rep.expect(buildOctree(keys, root, opt.leafSize, tree).ok(), what + ": build");
    std::vector<double> mass0 = cells.mass;
    if (sgn) {
      double total = 0;
      for (double m : mass0) total += m;
      applyDensityContrast(cells, opt, total);
      const double rho = contrastDensity(opt, cells.scale, total).rhoScaled;
      bool anyNegative = false;
      for (std::size_t j = 0; j < cells.mass.size(); ++j) {
        rep.same(cells.mass[j], contrastMass<DeviceRn>(mass0[j], rho, cells.size[j]), what + ": contrast mass");
        anyNegative = anyNegative || cells.mass[j] < 0;
      }
      rep.expect(anyNegative, what + ": the contrast makes signed sources");
    }
    computeMoments(cells, opt, tree);
    const std::vector<double> S = nodeSecondMoments(cells, tree);
    // the device's sweep: children before parents, the node cube from its first key (kernel_moments.cu)
    const std::size_t nodes = tree.nodeCount();
    std::vector<Node> dev(nodes);
    for (std::size_t i = nodes; i-- > 0;) {
      const int level = tree.level[i];
      const double side = nodeCubeSide<DeviceRn>(root.side, level);
      const std::uint64_t prefix = keys[tree.cellBegin[i]] >> (3 * (kKeyBits - level));
      const std::uint32_t ic[3] = {compactBits3(prefix), compactBits3(prefix >> 1), compactBits3(prefix >> 2)};
      double centre[3];
      for (int d = 0; d < 3; ++d) {
        centre[d] = nodeCubeCentre<DeviceRn>(root.lo[d], ic[d], side);
        rep.same(tree.centre[3 * i + d], centre[d], what + ": cube centre (build coords vs key prefix)");
      }
      if (tree.isLeaf(i)) {
        std::vector<Cell> cs;
        for (std::uint32_t j = tree.cellBegin[i]; j < tree.cellBegin[i] + tree.cellCount[i]; ++j)
          cs.push_back(Cell{cells.x[j], cells.y[j], cells.z[j], cells.mass[j], cells.size[j]});
        dev[i] = leafNode<DeviceRn>(cs, bonsai, sgn, side, centre, opt.theta);
      } else {
        std::vector<Node> kids(dev.begin() + tree.childBegin[i], dev.begin() + tree.childBegin[i] + tree.childCount[i]);
        dev[i] = parentNode<DeviceRn>(kids, bonsai, sgn, side, centre, opt.theta);
      }
      const Node& n = dev[i];
      rep.same(tree.mass[i], n.m, what + ": node mass");
      for (int d = 0; d < 3; ++d) {
        rep.same(tree.com[3 * i + d], n.com[d], what + ": node com");
        rep.same(tree.extentLo[3 * i + d], n.lo[d], what + ": node extent");
        rep.same(tree.extentHi[3 * i + d], n.hi[d], what + ": node extent");
        if (sgn) rep.same(tree.dipole[3 * i + d], n.D[d], what + ": node dipole");
      }
      for (int r = 0; r < 6; ++r) rep.same(tree.quad[6 * i + r], n.q[r], what + ": node quadrupole");
      rep.same(tree.macRadius[i], n.macRadius, what + ": node MAC radius");
      rep.same(S[i], n.S, what + ": node S");
    }
    // the LET choice for remote boxes: the library's selection against the device's rule per node
    const SourceTree src = sourceTreeOf(tree, cells);
    EwaldTableView ev;
    for (int d = 0; d < 3; ++d) {
      const double P = cells.scale;  // the unit box in scaled lengths
      ev.period[d] = sgn ? P : 0.0;
      ev.invPeriod[d] = sgn ? 1.0 / P : 0.0;
      ev.reach[d] = sgn ? 0.5625 * P : 0.0;
    }
    Rand rnd(6 + variant);
    for (int b = 0; b < 40; ++b) {
      double lo[3], hi[3], W[3];
      for (int d = 0; d < 3; ++d) {
        lo[d] = rnd.uniform(-0.2, 1.0) * cells.scale;
        hi[d] = lo[d] + rnd.uniform(0.0, 0.5) * cells.scale;
        W[d] = b % 4 == 0 ? INFINITY : rnd.uniform(0, 0.05) * cells.scale;
      }
      LetSelection sel;
      if (sgn) essentialNodesForPeriodic(src, lo, hi, W, ev, sel);
      else essentialNodesFor(src, lo, hi, sel);
      // the device's choice: per node, empty or accepted travels childless, else opened (kernel_let.cu)
      std::vector<std::uint32_t> node{0};
      std::vector<std::uint8_t> kind;
      for (std::size_t k = 0; k < node.size(); ++k) {
        const std::uint32_t i = node[k];
        const double* c = &tree.com[3 * i];
        const bool acc = sgn ? periodicBoxAccepts<DeviceRn>(ev, c, tree.macRadius[i], lo, hi, W)
                             : macAccepts<DeviceRn>(c[0], c[1], c[2], tree.macRadius[i], lo, hi);
        if (nodeIsEmpty(tree.macRadius[i]) || acc) {
          kind.push_back(LetSelection::Accepted);
        } else if (tree.isLeaf(i)) {
          kind.push_back(LetSelection::OpenedLeaf);
        } else {
          kind.push_back(LetSelection::Opened);
          for (std::uint32_t j = 0; j < tree.childCount[i]; ++j) node.push_back(tree.childBegin[i] + j);
        }
      }
      rep.expect(sel.node == node && sel.kind == kind, what + ": LET selection for a remote box");
    }
  }
}

/// The particles' tree of the core library (tree/particle_tree.cpp) against the device's sweep of the extents
/// (cuda/kernel_particles.cu nodeEpsKernel: per node, a leaf's particles then an internal node's children, with
/// the device's rounding): every node's extent bit for bit. A clustered set (three clumps of very different sizes,
/// coincident particles), leaves of 1 and 8.
void checkParticleExtents(Report& rep) {
  Rand rnd(2718);
  std::vector<double> x, y, z, m;
  const double centre[3][3] = {{0.3, 0.3, 0.3}, {0.7, 0.6, 0.5}, {0.2, 0.8, 0.6}};
  const double radius[3] = {0.2, 1e-3, 1e-6};
  for (int k = 0; k < 3; ++k)
    for (int i = 0; i < 3000; ++i) {
      x.push_back(centre[k][0] + radius[k] * rnd.uniform(-1, 1) * rnd.uniform(0, 1));
      y.push_back(centre[k][1] + radius[k] * rnd.uniform(-1, 1) * rnd.uniform(0, 1));
      z.push_back(centre[k][2] + radius[k] * rnd.uniform(-1, 1) * rnd.uniform(0, 1));
      m.push_back(rnd.integer(0, 19) == 0 ? 0.0 : rnd.uniform(0.5, 1.5));
    }
  for (int i = 0; i < 20; ++i) {  // coincident
    x.push_back(0.5); y.push_back(0.5); z.push_back(0.5); m.push_back(1.0);
  }
  ParticlesView view{x.data(), y.data(), z.data(), m.data(), nullptr, 1e-4, x.size()};
  for (const int leaf : {1, 8}) {
    SolveOptions opt;
    opt.leafSize = leaf;
    opt.theta = 0.42;
    ParticleTree pt;
    const Status st = buildParticleTree(view, opt, 0.0, pt);
    rep.expect(st.ok(), "particle tree: " + st.message);
    if (!st.ok()) continue;
    const Octree& t = pt.tree;
    std::vector<double> b(t.nodeCount(), 0.0);
    long differ = 0;
    for (std::size_t i = t.nodeCount(); i-- > 0;) {
      const double* com = &t.com[3 * i];
      double e = 0;
      if (t.isLeaf(i)) {
        double d2 = 0;
        for (std::uint32_t j = t.cellBegin[i]; j < t.cellBegin[i] + t.cellCount[i]; ++j)
          d2 = stdMax(d2, extentDistance2<DeviceRn>(pt.sorted.x[j], pt.sorted.y[j], pt.sorted.z[j], com));
        e = leafExtent<DeviceRn>(d2);
      } else {
        for (std::uint32_t c = t.childBegin[i]; c < t.childBegin[i] + t.childCount[i]; ++c)
          e = stdMax(e, childExtent<DeviceRn>(&t.com[3 * c], b[c], com));
      }
      b[i] = e;
      if (!sameBits(e, pt.extent[i])) ++differ;
    }
    rep.expect(differ == 0, fmt("particle tree (leaves of %g): %g node extents differ from the device's sweep",
                                double(leaf), double(differ)));
  }
}

/// The FMM's LET rule (physics/fmm_let_k.h, a distributed FMM, issue #20): a node the sender sends childless for a
/// receiver's FmmReach (box of leaf centres, largest leaf radius, critical radius, |mass| and norms, smallest lower
/// bound) must pass the one-process pair test (fmmPairAccepts / fmmSignedPairAccepts) with every leaf inside those
/// bounds, with either rounding, or the receiver would have to open it. Leaves at the box's corners, on its faces
/// and inside, at the bounds and below them; sources just beyond the box. The canary: measured to the box's centre
/// instead of the box, some sources would travel childless and fail.
void checkFmmLet(Report& rep) {
  Rand rnd(20);
  long canary = 0, accepted = 0;
  for (int it = 0; it < 100000; ++it) {
    const int order = rnd.integer(3, 7);
    const double theta = rnd.uniform(0.3, 0.9), tol = rnd.integer(0, 3) == 0 ? 0.0 : std::ldexp(1.0, rnd.integer(-20, -8));
    const double unit = std::ldexp(1.0, rnd.integer(-8, 8));
    // test 3 (accelerations) in a third of the cases: a limit of |M| / unit^2 times 2^-16 .. 2^-4
    const double accel = rnd.integer(0, 2) == 0 ? std::ldexp(1.0, rnd.integer(-16, -4)) / (unit * unit) : 0.0;
    double lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
      lo[d] = rnd.uniform(-2, 2) * unit;
      hi[d] = lo[d] + rnd.uniform(0, 1) * unit;
    }
    // the receiver's bounds over its leaves
    const double raMax = rnd.uniform(0.01, 0.2) * unit, rcaMax = raMax / theta;
    const double maMax = rnd.uniform(0.1, 10), lowMin = rnd.uniform(0.1, 10) / unit;
    double qaMax[8];
    for (int n = 0; n <= order; ++n) qaMax[n] = maMax * std::pow(raMax, n) * rnd.uniform(0, 1);
    // the source: near the box (a corner, an edge, a face) at a distance of a few leaf radii
    double cb[3];
    const int mode = rnd.integer(0, 2);
    for (int d = 0; d < 3; ++d) {
      const double gap = rnd.uniform(0, 6) * raMax;
      const int side = (mode == 0 || d == 0 || (mode == 1 && d == 1)) ? rnd.integer(0, 1) * 2 - 1 : 0;
      cb[d] = side < 0 ? lo[d] - gap : side > 0 ? hi[d] + gap : rnd.uniform(lo[d], hi[d]);
    }
    const double rb = rnd.uniform(0.01, 0.5) * unit, rcb = rb / theta, mb = rnd.uniform(0.1, 10);
    const double lowB = rnd.uniform(0.1, 10) / unit;
    double qb[8];
    for (int n = 0; n <= order; ++n) qb[n] = mb * std::pow(rb, n) * rnd.uniform(0, 1);
    const double scale = rnd.uniform(0.1, 10) / unit;
    const bool signedSources = rnd.integer(0, 1), leafB = rnd.integer(0, 1);  // leafB: test 2b on the source's side
    auto boxOk = [&](auto rn, const double* l, const double* h) {
      using Rn = decltype(rn);
      return signedSources ? fmmSignedBoxAccepts<Rn>(l, h, raMax, rcaMax, qaMax, cb, rb, rcb, qb, scale, order, tol)
                           : fmmBoxAccepts<Rn>(l, h, raMax, rcaMax, maMax, lowMin, cb, rb, rcb, mb, lowB, order, tol,
                                               accel, leafB);
    };
    const bool host = boxOk(RoundNearest{}, lo, hi), device = boxOk(DeviceRn{}, lo, hi);
    rep.expect(host == device, "FMM LET rule: host = device");
    double mid[3];
    for (int d = 0; d < 3; ++d) mid[d] = 0.5 * (lo[d] + hi[d]);
    const bool centreOk = boxOk(RoundNearest{}, mid, mid);
    if (!host && !centreOk) continue;
    accepted += host;
    for (int leaf = 0; leaf < 8; ++leaf) {
      // a leaf within the bounds: its centre at a corner (the first), on a face or inside; at the bounds or below
      double ca[3];
      for (int d = 0; d < 3; ++d) {
        const int k = leaf == 0 ? rnd.integer(0, 1) * 2 : rnd.integer(0, 3);
        ca[d] = k == 0 ? lo[d] : k == 2 ? hi[d] : rnd.uniform(lo[d], hi[d]);
      }
      const bool full = rnd.integer(0, 1), leafA = rnd.integer(0, 1);  // the reach holds leaves and internal nodes
      const double ra = full ? raMax : raMax * rnd.uniform(0, 1), ma = full ? maMax : maMax * rnd.uniform(0, 1);
      const double la = full ? lowMin : lowMin * rnd.uniform(1, 2);
      double qa[8];
      for (int n = 0; n <= order; ++n) qa[n] = full ? qaMax[n] : qaMax[n] * rnd.uniform(0, 1);
      auto pairOk = [&](auto rn) {
        using Rn = decltype(rn);
        const double rca = fmmCriticalRadius<Rn>(ra, theta) <= rcaMax ? fmmCriticalRadius<Rn>(ra, theta) : rcaMax;
        return signedSources ? fmmSignedPairAccepts<Rn>(ca, ra, rca, qa, cb, rb, rcb, qb, scale, order, tol)
                             : fmmPairAccepts<Rn>(ca, ra, rca, ma, la, cb, rb, rcb, mb, lowB, order, tol, accel, leafA,
                                                  leafB);
      };
      if (host) {
        rep.expect(pairOk(RoundNearest{}) && pairOk(DeviceRn{}),
                   fmt("FMM LET rule: a node sent childless fails the pair test with a leaf in the bounds (order %g, "
                       "theta %.17g, tolerance %.17g, accelLimit %.17g)", double(order), theta, tol, accel));
      } else if (centreOk && !pairOk(RoundNearest{})) {
        ++canary;
      }
    }
  }
  rep.expect(accepted > 1000, "FMM LET rule: enough sources travel childless to test");
  rep.expect(canary > 0, "canary: measured to the box's centre, some sources sent childless would fail");
  std::printf("  FMM LETs: %ld sources childless; measured to the box's centre %ld pairs would fail\n", accepted, canary);
}

}  // namespace

/// The FMM upward pass's rules (fmm/upward_k.h: the sums, centre, distance, P2M and M2M terms) over random leaves and
/// children, host against device rounding; the canary: contracted arithmetic changes the terms.
template <class Rn>
std::vector<double> upwardCase(Rand& rnd, std::uint64_t seed) {
  rnd.g.seed(seed);
  const fmm::MultiIndex& mi = fmm::MultiIndex::of(7);
  const fmm::UpwardTables tab = fmm::upwardTables(mi);
  const fmm::MonoTables mono{tab.prev.data(), tab.axis.data(), tab.scale.data()};
  const int cells = rnd.integer(1, 70);
  std::vector<double> x(cells), y(cells), z(cells), m(cells), out;
  for (int j = 0; j < cells; ++j) {
    x[j] = rnd.coordinate(1.0);
    y[j] = rnd.coordinate(1.0);
    z[j] = rnd.coordinate(1.0);
    m[j] = rnd.uniform(0.5, 1.5) * std::ldexp(1.0, rnd.integer(-20, 20));
  }
  fmm::FmmSums a;
  for (int j = 0; j < cells; ++j) fmm::fmmAddCell<Rn>(a, m[j], x[j], y[j], z[j]);
  fmm::FmmSums twice = a;
  fmm::fmmAddSums<Rn>(twice, a);
  double c[3];
  for (int d = 0; d < 3; ++d) c[d] = fmm::fmmCentreOf<Rn>(a, d, 0.5, false);
  out = {a.m, a.am, a.s[0], a.s[1], a.s[2], twice.s[0], c[0], c[1], c[2],
         fmm::fmmCellDistance2<Rn>(x[0], y[0], z[0], c)};
  std::vector<double> Mc(8 * std::size_t(mi.terms));
  for (int q = 0; q < mi.terms; ++q) {
    Mc[std::size_t(q)] = fmm::fmmP2MTerm<Rn>(mono, q, x.data(), y.data(), z.data(), m.data(), 0, std::uint32_t(cells), c);
    out.push_back(Mc[std::size_t(q)]);
  }
  const int children = rnd.integer(1, 8);
  const double* rows[8];
  double h[8][3];
  for (int k = 0; k < children; ++k) {
    for (int q = 0; q < mi.terms; ++q) Mc[std::size_t(k * mi.terms + q)] = rnd.scaled();
    rows[k] = &Mc[std::size_t(k * mi.terms)];
    for (int d = 0; d < 3; ++d) h[k][d] = rnd.uniform(-0.5, 0.5);
  }
  for (int q = 0; q < mi.terms; ++q)
    out.push_back(fmm::fmmM2MTerm<Rn>(mono, tab.m2mJ.data(), tab.m2mNJ.data(), tab.m2mStart[std::size_t(q)],
                                      tab.m2mStart[std::size_t(q) + 1], rows, h, children));
  return out;
}

void checkFmmUpward(Report& rep) {
  Rand rnd(20);
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    const std::vector<double> h = upwardCase<RoundNearest>(rnd, seed), d = upwardCase<DeviceRn>(rnd, seed),
                              f = upwardCase<FusedRn>(rnd, seed);
    bool same = h.size() == d.size(), fusedSame = f.size() == d.size();
    for (std::size_t k = 0; same && k < h.size(); ++k) same = sameBits(h[k], d[k]);
    for (std::size_t k = 0; fusedSame && k < f.size(); ++k) fusedSame = sameBits(f[k], d[k]);
    rep.expect(same, "FMM upward rules, random leaf and children, seed " + std::to_string(seed));
    rep.canary(!fusedSame);
  }
}

/// The device kernel's forms of P2M and M2M (monomial rows made term by term, the cells' products in their lanes)
/// against the rules' term-by-term definitions (fmmP2MTerm, fmmM2MTerm): the same bits, leaves of 1..140 cells.
void checkFmmUpwardRows(Report& rep) {
  Rand rnd(21);
  const fmm::MultiIndex& mi = fmm::MultiIndex::of(7);
  const fmm::UpwardTables tab = fmm::upwardTables(mi);
  const fmm::MonoTables mono{tab.prev.data(), tab.axis.data(), tab.scale.data()};
  const int T = mi.terms;
  for (int rep_ = 0; rep_ < 60; ++rep_) {
    const int cells = rnd.integer(1, 140);
    std::vector<double> x(cells), y(cells), z(cells), m(cells), row(T), lanes(std::size_t(T) * 8, 0.0);
    for (int j = 0; j < cells; ++j) {
      x[j] = rnd.coordinate(1.0);
      y[j] = rnd.coordinate(1.0);
      z[j] = rnd.coordinate(1.0);
      m[j] = rnd.uniform(-1.5, 1.5) * std::ldexp(1.0, rnd.integer(-20, 20));
    }
    const double c[3] = {rnd.coordinate(1.0), rnd.coordinate(1.0), rnd.coordinate(1.0)};
    for (int j = 0; j < cells; ++j) {
      const double h[3] = {RoundNearest::sub(x[j], c[0]), RoundNearest::sub(y[j], c[1]), RoundNearest::sub(z[j], c[2])};
      fmm::fmmMonomialRow(mono, T, h, row.data());
      for (int q = 0; q < T; ++q) {
        double& lane = lanes[std::size_t(q) * 8 + std::size_t(fmm::fmmP2MLaneOf(std::uint32_t(j), 0))];
        lane = fmm::fmmP2MLaneAdd(lane, m[j], row[std::size_t(q)]);
      }
    }
    bool same = true;
    for (int q = 0; q < T && same; ++q)
      same = sameBits(fmm::fmmLaneTotal(&lanes[std::size_t(q) * 8]),
                      fmm::fmmP2MTerm(mono, q, x.data(), y.data(), z.data(), m.data(), 0, std::uint32_t(cells), c));
    rep.expect(same, "P2M by monomial rows and lanes = fmmP2MTerm, " + std::to_string(cells) + " cells");
    const int children = rnd.integer(1, 8);
    std::vector<double> Mrows(8 * std::size_t(T)), rows(8 * std::size_t(T));
    const double* Mc[8];
    double h[8][3];
    for (int k = 0; k < children; ++k) {
      for (int q = 0; q < T; ++q) Mrows[std::size_t(k * T + q)] = rnd.scaled();
      Mc[k] = &Mrows[std::size_t(k * T)];
      for (int d = 0; d < 3; ++d) h[k][d] = rnd.uniform(-0.5, 0.5);
      fmm::fmmMonomialRow(mono, T, h[k], &rows[std::size_t(k * T)]);
    }
    same = true;
    for (int q = 0; q < T && same; ++q) {
      const int f = tab.m2mStart[std::size_t(q)], l = tab.m2mStart[std::size_t(q) + 1];
      same = sameBits(fmm::fmmM2MTermOfRows(tab.m2mJ.data(), tab.m2mNJ.data(), f, l, Mrows.data(), std::size_t(T), 1,
                                            rows.data(), T, 1, children),
                      fmm::fmmM2MTerm(mono, tab.m2mJ.data(), tab.m2mNJ.data(), f, l, Mc, h, children));
    }
    rep.expect(same, "M2M by monomial rows = fmmM2MTerm, " + std::to_string(children) + " children");
  }
  // the compile-time tables of the device's unrolled rows = upwardTables
  auto sameTables = [&](auto tag) {
    constexpr int P = decltype(tag)::value;
    constexpr fmm::MonoTablesOf<P> c{};
    const fmm::UpwardTables u = fmm::upwardTables(fmm::MultiIndex::of(P));
    bool same = int(u.prev.size()) == c.kTerms;
    for (int q = 0; same && q < c.kTerms; ++q)
      same = u.prev[std::size_t(q)] == c.prev[q] && u.axis[std::size_t(q)] == c.axis[q] &&
             sameBits(u.scale[std::size_t(q)], c.scale[q]);
    rep.expect(same, "MonoTablesOf<" + std::to_string(P) + "> = upwardTables");
  };
  sameTables(std::integral_constant<int, 1>{});
  sameTables(std::integral_constant<int, 3>{});
  sameTables(std::integral_constant<int, 5>{});
  sameTables(std::integral_constant<int, 6>{});
  sameTables(std::integral_constant<int, 7>{});
}

int main() {
  Report parts[] = {Report("MAC"), Report("image test"), Report("moments"), Report("LET choice"),
                    Report("core library vs device rounding"), Report("FMM MAC"), Report("LET for softened targets"),
                    Report("source extent"), Report("particle LETs"), Report("FMM LETs"), Report("FMM upward")};
  checkMac(parts[0]);
  checkImages(parts[1]);
  checkMoments(parts[2]);
  checkLetAccept(parts[3]);
  checkCore(parts[4]);
  checkFmmMac(parts[5]);
  checkSoftLet(parts[6]);
  checkExtent(parts[7]);
  checkParticleLet(parts[8]);
  checkParticleExtents(parts[4]);
  checkFmmLet(parts[9]);
  checkFmmUpward(parts[10]);
  checkFmmUpwardRows(parts[10]);
  long checks = 0, failures = 0, fusedCases = 0, fusedDiffer = 0;
  for (const Report& r : parts) {
    std::printf("%-32s %9ld checks, %ld failed", r.part, r.checks, r.failures);
    if (r.fusedCases) std::printf("; fused arithmetic changes %ld of %ld random cases", r.fusedDiffer, r.fusedCases);
    std::printf("\n");
    checks += r.checks;
    failures += r.failures;
    fusedCases += r.fusedCases;
    fusedDiffer += r.fusedDiffer;
  }
  // the canary: the sweeps must be able to see a contracted build, or agreeing would prove nothing
  const bool canaryOk = fusedDiffer > 0;
  if (!canaryOk) std::printf("  FAIL the random sweeps never told fused from unfused arithmetic apart\n");
  std::printf("physics rules: %ld checks, %ld failed; canary %s (%ld of %ld cases differ under FMA contraction)\n",
              checks, failures, canaryOk ? "ok" : "FAILED", fusedDiffer, fusedCases);
  return failures == 0 && canaryOk ? 0 : 1;
}
