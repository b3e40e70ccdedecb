/// \file m2l_variants.h
/// \brief The FMM's M2L kernels on the device (CudaOptions::fmmM2L, AMRGRAV_FMM_M2L; cuda/kernel_fmm.cu), by number.
/// All evaluate cuda/m2l_device.h's fused kernels (each L term's sum in the same order), so they agree with each
/// other to the bit unless the compiler contracts a multiply-add differently. Plain host code (the tools name them).
#pragma once

namespace amrgrav {
namespace cuda {

/// Plain: one warp per target node (2 a block), the sources' multipoles read where they lie. Staged: one warp per
/// target node and block, each batch of 32 sources' multipoles first copied into shared memory
/// (fmm/m2l_stage_k.h), the L terms of degree <= 3 in registers at p 7 (m2lStagedRegTerms). StagedLowRegs: staged,
/// with the plain kernel's register terms (degree <= 2 at p 7). Direct, DirectLowRegs: staged (and lowregs), the
/// derivatives by m2l_device.h's m2lDirect (the recurrence on D itself: fewer registers and operations, other
/// rounding: the same L as the others to ~1e-15, not to the bit). Harmonic (the default): staged, through
/// m2l_device.h's m2lHarmonic: the sources' multipoles folded first onto their (p+1)^2 harmonic terms (c <= 1; a fold
/// kernel into FmmDeviceView::Mh), the derivatives with c <= 2, the target's harmonic terms unfolded into L once:
/// about half the products and half the derivatives' work of the others, the same L to ~1e-15.
enum FmmM2LVariant : int {
  kFmmM2LPlain = 0,
  kFmmM2LStaged = 1,
  kFmmM2LStagedLowRegs = 2,
  kFmmM2LDirect = 3,
  kFmmM2LDirectLowRegs = 4,
  kFmmM2LHarmonic = 5,
  kFmmM2LVariants = 6
};

/// The variant's name ("plain", "staged", "staged-lowregs", "direct", "direct-lowregs", "harmonic"; "?" for
/// none).
inline const char* fmmM2LVariantName(int variant) {
  switch (variant) {
    case kFmmM2LPlain: return "plain";
    case kFmmM2LStaged: return "staged";
    case kFmmM2LStagedLowRegs: return "staged-lowregs";
    case kFmmM2LDirect: return "direct";
    case kFmmM2LDirectLowRegs: return "direct-lowregs";
    case kFmmM2LHarmonic: return "harmonic";
    default: return "?";
  }
}

}  // namespace cuda
}  // namespace amrgrav
