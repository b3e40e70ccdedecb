/// \file let_layout.h
/// \brief The wire layout of a packed LET (let/let.h PackedLet), shared by the host's packLet/viewPackedLet and the
/// GPU rank's device-side packing (cuda/kernel_let.cu), so both write the same bytes.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/hostdevice.h"

namespace amrgrav {

constexpr std::uint64_t kLetMagic = 0x414d52474c455431ull;        // "AMRGLET1"
constexpr std::uint64_t kLetMagicDipole = 0x414d52474c455432ull;  // "AMRGLET2": the nodes carry dipoles
constexpr std::uint64_t kLetMagicParticles = 0x414d5247504c4554ull;  // "AMRGPLET": a particle LET (softenings)
constexpr std::uint64_t kFmmLetMagic = 0x414d5247464c4554ull;   // "AMRGFLET": an FMM tree's LET (fmm/fmm_let.h)
constexpr std::size_t kLetHeaderWords = 3;                   // magic, nodes, cells

/// Byte offsets from the start of the buffer of each array of a packed LET of n nodes and c cells: the header, then
/// mass, com (3), quad (6), macRadius, secondMoment, with `dipole` the dipole (3; signed sources, magic
/// kLetMagicDipole), with `softened` (a particle LET, magic kLetMagicParticles) each node's smallest and largest
/// softening and source extent (physics/softening_k.h), cell x, y, z, mass (doubles), with `softened` each source's
/// softening, then cellBegin, cellCount, childBegin (uint32), childCount (uint8); `end` is the buffer's size, a
/// multiple of 8. Without `softened` the offsets of the softened arrays are those of the next array (size 0).
struct LetLayout {
  std::size_t mass, com, quad, macRadius, secondMoment, dipole, epsMin, epsMax, extent, x, y, z, cellMass, eps,
      cellBegin, cellCount, childBegin, childCount, end;
  AG_HD LetLayout(std::size_t n, std::size_t c, bool withDipole = false, bool softened = false) {
    std::size_t o = kLetHeaderWords * 8;
    mass = o; o += 8 * n;
    com = o; o += 24 * n;
    quad = o; o += 48 * n;
    macRadius = o; o += 8 * n;
    secondMoment = o; o += 8 * n;
    dipole = o; o += withDipole ? 24 * n : 0;
    epsMin = o; o += softened ? 8 * n : 0;
    epsMax = o; o += softened ? 8 * n : 0;
    extent = o; o += softened ? 8 * n : 0;
    x = o; o += 8 * c;
    y = o; o += 8 * c;
    z = o; o += 8 * c;
    cellMass = o; o += 8 * c;
    eps = o; o += softened ? 8 * c : 0;
    cellBegin = o; o += 4 * n;
    cellCount = o; o += 4 * n;
    childBegin = o; o += 4 * n;
    childCount = o; o += n;
    end = (o + 7) / 8 * 8;
  }
};

}  // namespace amrgrav
