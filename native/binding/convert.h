/// \file convert.h
/// \brief JS <-> plain-struct conversion for the addon. Only this file and addon.cc know about Napi.
#pragma once
#include <napi.h>

#include <string>
#include <vector>

#include "core/blocks.h"
#include "core/status.h"
#include "core/system.h"
#include "core/types.h"

namespace amrgrav {

/// The caller's typed arrays, kept alive (persistent references) while a worker reads them off the JS thread.
struct CellArrays {
  std::vector<Napi::Reference<Napi::Float64Array>> refs;
  CellsView view;
};

/// Reads {x, y, z, mass, size} (Float64Arrays of equal length). Returns an error status naming the problem.
Status readCells(const Napi::Object& obj, CellArrays& out);

/// The result arrays the backend writes into (the caller's, or new ones), kept alive while a worker runs.
struct OutputArrays {
  std::vector<Napi::Reference<Napi::Float64Array>> refs;  ///< potential, then ax, ay, az
  ResultTargets targets;
};

/// Output arrays for n cells: the caller's {potential, ax?, ay?, az?} Float64Arrays of length n when `value` is an
/// object (ax, ay, az required with accelerations), else new arrays. An error status names a bad array.
Status prepareOutputs(Napi::Env env, const Napi::Value& value, std::size_t n, bool accelerations, OutputArrays& out);

/// The caller's blocks and result arrays (core/blocks.h), kept alive while a worker reads and writes them.
struct BlockArrays {
  std::vector<Napi::Reference<Napi::TypedArray>> refs;
  BlocksView view;
  BlockOutputs out;
};

/// Reads {nxb, nyb, nzb, lo, dx, density, guard?, blockIndex?, varStride?, blockStride?, meshChanged?} (lo, dx:
/// Float64Arrays of 3 per block; blockIndex: Int32Array; density: Float64Array or Float32Array) and the outputs
/// {potential, ax?, ay?, az?} (the density's type; ax, ay, az with accelerations). Checks the blocks
/// (validateBlocks) and that every array is long enough for the slots it is read or written at.
Status readBlocks(const Napi::Value& blocks, const Napi::Value& out, const SolveOptions& opt, BlockArrays& b);

/// A system solve's parts besides the cells (core/system.h), kept alive while a worker reads them.
struct SystemArrays {
  std::vector<Napi::Reference<Napi::TypedArray>> refs;
  ParticlesView particles;
  PointsView probes;
  const std::uint32_t* targets = nullptr;  ///< null: every cell
  std::size_t targetCount = 0;
};

/// Reads system.particles ({x, y, z, mass} Float64Arrays of one length and softening, a Float64Array of that length
/// or one number; absent: none), system.probes ({x, y, z} Float64Arrays of one length; absent: none) and
/// system.targets (a Uint32Array of cell indices; absent: every cell). The values are checked natively.
Status readSystemParts(const Napi::Object& system, SystemArrays& out);

/// Reads the options object (missing fields keep their defaults); `backend` receives 'cpu' (default), 'cuda' or
/// 'auto' (api/session.h chooses).
Status readOptions(const Napi::Value& value, SolveOptions& opt, std::string& backend);

/// Reads options.distributed (default false): run the tree solve as a collective over the MPI world.
Status readDistributed(const Napi::Value& options, bool& distributed);

/// A JS Error with .code set to the ErrorCode name.
Napi::Error makeError(Napi::Env env, const Status& st);

/// {potential, ax?, ay?, az?}: the arrays of `arrays` (which the backend wrote).
Napi::Object arraysToJs(Napi::Env env, const OutputArrays& arrays);
/// A solve's statistics object (`stats` of the JS result), with the backend that ran it.
Napi::Object statsToJs(Napi::Env env, const SolveStats& stats, const char* backend);
/// The result object {potential, ax?, ay?, az?, stats}: the arrays of `arrays` (which the backend wrote) and r's
/// statistics.
Napi::Object resultToJs(Napi::Env env, const SolveResult& r, const char* backend, const OutputArrays& arrays);

}  // namespace amrgrav
