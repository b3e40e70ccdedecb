/// \file status.h
/// \brief Errors as data: the core returns a Status, the binding turns it into a typed JS error.
/// Nothing in native/ aborts or throws across the Node boundary.
#pragma once
#include <string>
#include <utility>

namespace amrgrav {

enum class ErrorCode {
  Ok = 0,
  InvalidInput,   ///< bad cell data (NaN, negative mass, outside the box, ...)
  InvalidOption,  ///< an option out of range
  OutOfMemory,    ///< host or device allocation failed
  NoDevice,       ///< a GPU backend was asked for where none exists
  Internal,       ///< a bug or a library failure (CUDA, MPI)
};

/// Stable names, used as the `code` of the JS error.
inline const char* errorCodeName(ErrorCode c) {
  switch (c) {
    case ErrorCode::Ok: return "OK";
    case ErrorCode::InvalidInput: return "INVALID_INPUT";
    case ErrorCode::InvalidOption: return "INVALID_OPTION";
    case ErrorCode::OutOfMemory: return "OUT_OF_MEMORY";
    case ErrorCode::NoDevice: return "NO_DEVICE";
    case ErrorCode::Internal: return "INTERNAL";
  }
  return "INTERNAL";
}

struct Status {
  ErrorCode code = ErrorCode::Ok;
  std::string message;

  bool ok() const { return code == ErrorCode::Ok; }
  static Status success() { return {}; }
  static Status error(ErrorCode c, std::string msg) { return Status{c, std::move(msg)}; }
};

}  // namespace amrgrav

/// Propagates a non-ok Status.
#define AG_TRY(statusExpr)                              \
  do {                                                  \
    ::amrgrav::Status ag_status_ = (statusExpr);        \
    if (!ag_status_.ok()) return ag_status_;            \
  } while (0)
