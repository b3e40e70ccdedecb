/// \file rounding.h
/// \brief How the rules in physics/ round: every product, quotient, sum and square root on its own, to nearest.
///
/// The rules that decide which interactions happen (the MAC, the periodic image test, the node moments and MAC
/// radii, the LET choice) are written once, in physics/, and compiled for the host (the CPU backend, the reference)
/// and for the device (the CUDA backend). Both must give the same bits, so that both backends build the same
/// interaction lists. Each rule takes its arithmetic from a rounding policy Rn (a template parameter defaulting to
/// RoundNearest) instead of writing a * b + c:
///   - on the device (__CUDA_ARCH__) RoundNearest is __dadd_rn, __dsub_rn, __dmul_rn, __ddiv_rn and __dsqrt_rn,
///     which nvcc never fuses into an FMA whatever -fmad or --use_fast_math say (the walk's file is built with
///     fast math for its float interactions);
///   - on the host it is the plain IEEE operators, and every host target that compiles a rule is built with
///     -ffp-contract=off (CMakeLists.txt), so the host compiler never fuses them either (x86-64 GCC contracts by
///     default wherever FMA instructions are enabled: -march=native, or the walk's AVX-512 clones).
/// Double precision only, with round-to-nearest-even and gradual underflow on both sides (the device's
/// double-precision ops never flush denormals, fast math or not; the host runs with the default MXCSR).
/// native/tests/physics_rules.cpp instantiates every rule with RoundNearest and with a policy that forces each
/// operation through memory (the device's one-rounding-per-operation, whatever the compiler does), and checks
/// that the two agree bit for bit on edge cases.
#pragma once
#include <cmath>

#include "core/hostdevice.h"

namespace amrgrav {

/// Unrolls a rule's short fixed loop on the device (its arrays then stay in registers); nothing on the host.
#if defined(__CUDA_ARCH__)
#define AG_RULE_UNROLL _Pragma("unroll")
#else
#define AG_RULE_UNROLL
#endif

/// The rules' default rounding policy (see the file comment).
struct RoundNearest {
#if defined(__CUDA_ARCH__)
  AG_HD static double add(double a, double b) { return __dadd_rn(a, b); }
  AG_HD static double sub(double a, double b) { return __dsub_rn(a, b); }
  AG_HD static double mul(double a, double b) { return __dmul_rn(a, b); }
  AG_HD static double div(double a, double b) { return __ddiv_rn(a, b); }
  AG_HD static double sqrt(double a) { return __dsqrt_rn(a); }
  AG_HD static double rint(double a) { return ::rint(a); }  // exact: the nearest integer, ties to even
  AG_HD static double abs(double a) { return ::fabs(a); }    // exact
#else
  AG_HD static double add(double a, double b) { return a + b; }
  AG_HD static double sub(double a, double b) { return a - b; }
  AG_HD static double mul(double a, double b) { return a * b; }
  AG_HD static double div(double a, double b) { return a / b; }
  AG_HD static double sqrt(double a) { return std::sqrt(a); }
  AG_HD static double rint(double a) { return std::rint(a); }
  AG_HD static double abs(double a) { return std::fabs(a); }
#endif
};

/// a*a + b*b + c*c, left to right, every operation rounded on its own.
template <class Rn = RoundNearest>
AG_HD double squaredNorm(double a, double b, double c) {
  return Rn::add(Rn::add(Rn::mul(a, a), Rn::mul(b, b)), Rn::mul(c, c));
}

/// std::min / std::max exactly as the standard library picks (the first argument on ties; min(a, b) = b < a ? b
/// : a). Exact, so any evaluation order of a reduction gives the same value where no NaN is involved (validation
/// rejects NaN before any rule runs).
AG_HD double stdMin(double a, double b) { return b < a ? b : a; }
AG_HD double stdMax(double a, double b) { return a < b ? b : a; }

}  // namespace amrgrav
