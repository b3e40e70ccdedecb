/// \file math_constants.h
/// \brief The constants the Ewald sums (ewald/sums.cpp) and the FMM's far kernel (fmm/far_kernel.cpp, their
/// derivatives) share.
#pragma once

namespace amrgrav {

constexpr double kPi = 3.14159265358979323846;
constexpr double kSqrtPi = 1.77245385090551602730;
constexpr double kEulerGamma = 0.57721566490153286061;

}  // namespace amrgrav
