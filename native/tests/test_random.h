/// \file test_random.h
/// \brief The host test programs' pseudo-random numbers: a 64-bit linear congruential step (Knuth's MMIX
/// constants), top 63 bits; reproducible on every platform, which std::mt19937's distributions are not.
#pragma once
#include <cstdint>

namespace amrgrav::tests {

inline std::uint64_t nextRandom(std::uint64_t& s) {
  s = s * 6364136223846793005ULL + 1442695040888963407ULL;
  return s >> 1;  // 63 bits
}

}  // namespace amrgrav::tests
