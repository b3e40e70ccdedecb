/// \file check_report.h
/// \brief The host test programs' report: one "PASS name: detail" or "FAIL name: detail" line per check, counted for
/// the summary line each program prints last (CTest takes the exit status; the vitest wrappers read the lines).
#pragma once
#include <cstdio>
#include <string>

namespace amrgrav::tests {

inline int gChecks = 0, gFailed = 0;

inline void check(const std::string& name, bool ok, const std::string& detail) {
  ++gChecks;
  if (!ok) ++gFailed;
  std::printf("%s %s: %s\n", ok ? "PASS" : "FAIL", name.c_str(), detail.c_str());
}

}  // namespace amrgrav::tests
