/// \file cache.cpp
/// \brief The Ewald table's disk cache: a fixed header (magic, version, spec, grid, count, checksum) and the
/// coefficients. Anything that does not match exactly is treated as missing, and the table is rebuilt.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ewald/table.h"

namespace amrgrav {
namespace {

constexpr char kMagic[8] = {'A', 'G', 'E', 'W', 'A', 'L', 'D', '2'};
constexpr std::uint32_t kVersion = 3;  // 3: word-lane checksum

struct Header {
  char magic[8];
  std::uint32_t version, coefs;
  double L[3];
  std::uint32_t periodicMask;
  std::int32_t resolution;
  std::int32_t n[3];
  std::int32_t pad;
  double h[3];
  std::uint64_t count;     ///< doubles that follow
  std::uint64_t checksum;  ///< fnv1a() below of those doubles
};

/// FNV-1a style over 64-bit words in four interleaved lanes (independent multiplies: ~1 ms for a 6 MB table, where
/// the byte-serial FNV-1a took ~8 ms, most of a cached load), the lanes folded at the end. Tables are whole doubles.
std::uint64_t fnv1a(const void* data, std::size_t bytes) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  constexpr std::uint64_t kPrime = 1099511628211ull;
  std::uint64_t lane[4] = {1469598103934665603ull, 1469598103934665603ull ^ 1, 1469598103934665603ull ^ 2,
                           1469598103934665603ull ^ 3};
  const std::size_t words = bytes / 8;
  std::size_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (int l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, p + 8 * (i + l), 8);
      lane[l] = (lane[l] ^ w) * kPrime;
    }
  std::uint64_t h = 1469598103934665603ull;
  for (; i < words; ++i) {
    std::uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    h = (h ^ w) * kPrime;
  }
  for (std::size_t b = 8 * words; b < bytes; ++b) h = (h ^ p[b]) * kPrime;
  for (int l = 0; l < 4; ++l) h = (h ^ lane[l]) * kPrime;
  return h;
}

std::uint32_t maskOf(const EwaldGeometry& g) {
  return (g.periodic[0] ? 1u : 0u) | (g.periodic[1] ? 2u : 0u) | (g.periodic[2] ? 4u : 0u);
}

bool makeDirs(const std::string& dir) {
  for (std::size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      const std::string part = dir.substr(0, i);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
    }
  }
  return true;
}

}  // namespace

std::string ewaldCacheDir() {
  const char* own = std::getenv("AMRGRAV_CACHE_DIR");
  if (own && *own) return own;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/amrgrav";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.cache/amrgrav";
  return "";
}

bool readEwaldTableFile(const std::string& path, const EwaldTableSpec& spec, EwaldTable& out, std::string& why) {
  const auto t0 = std::chrono::steady_clock::now();
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) { why = "no cached table at " + path; return false; }
  Header hd;
  int n[3];
  double h[3];
  bool ok = std::fread(&hd, sizeof hd, 1, f) == 1 && ewaldGrid(spec, n, h).ok();
  ok = ok && std::memcmp(hd.magic, kMagic, 8) == 0 && hd.version == kVersion && hd.coefs == kEwaldCoefs &&
       hd.periodicMask == maskOf(spec.box) && hd.resolution == spec.resolution;
  for (int d = 0; ok && d < 3; ++d) ok = hd.L[d] == spec.box.L[d] && hd.n[d] == n[d] && hd.h[d] == h[d];
  const std::size_t count = std::size_t(n[0] + 1) * (n[1] + 1) * (n[2] + 1) * kEwaldCoefs;
  ok = ok && hd.count == count;
  if (ok) {
    out.coef.resize(count);
    ok = std::fread(out.coef.data(), sizeof(double), count, f) == count && std::fgetc(f) == EOF &&
         fnv1a(out.coef.data(), count * sizeof(double)) == hd.checksum;
  }
  std::fclose(f);
  if (!ok) {
    why = "cached table " + path + " is corrupt or of another version: rebuilt";
    out.coef.clear();
    return false;
  }
  out.spec = spec;
  for (int d = 0; d < 3; ++d) { out.n[d] = n[d]; out.h[d] = h[d]; }
  out.secondsLoad = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return true;
}

bool writeEwaldTableFile(const std::string& path, const EwaldTable& t, std::string& why) {
  const std::size_t slash = path.rfind('/');
  if (slash != std::string::npos && !makeDirs(path.substr(0, slash))) {
    why = "cannot create the cache directory of " + path;
    return false;
  }
  Header hd{};
  std::memcpy(hd.magic, kMagic, 8);
  hd.version = kVersion;
  hd.coefs = kEwaldCoefs;
  for (int d = 0; d < 3; ++d) { hd.L[d] = t.spec.box.L[d]; hd.n[d] = t.n[d]; hd.h[d] = t.h[d]; }
  hd.periodicMask = maskOf(t.spec.box);
  hd.resolution = t.spec.resolution;
  hd.count = t.coef.size();
  hd.checksum = fnv1a(t.coef.data(), t.coef.size() * sizeof(double));
  // a private temporary name, then rename: readers never see a half-written file, writers never collide
  const std::string tmp = path + ".tmp." + std::to_string(getpid()) + "." +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) { why = "cannot write " + tmp; return false; }
  bool ok = std::fwrite(&hd, sizeof hd, 1, f) == 1 &&
            std::fwrite(t.coef.data(), sizeof(double), t.coef.size(), f) == t.coef.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    why = "cannot write the cached table " + path;
    return false;
  }
  return true;
}

}  // namespace amrgrav
