/// \file convert.cc
#include "binding/convert.h"
#include "binding/mpi_exports.h"


namespace amrgrav {
namespace {

Status invalidOption(const std::string& m) { return Status::error(ErrorCode::InvalidOption, m); }

Status readNumber(const Napi::Object& o, const char* key, double& v) {
  if (!o.Has(key)) return Status::success();
  Napi::Value x = o.Get(key);
  if (x.IsUndefined()) return Status::success();
  if (!x.IsNumber()) return invalidOption(std::string("option '") + key + "' must be a number");
  v = x.As<Napi::Number>().DoubleValue();
  return Status::success();
}

Status readInt(const Napi::Object& o, const char* key, int& v) {
  double d = v;
  Status st = readNumber(o, key, d);
  if (!st.ok()) return st;
  if (d != double(int(d))) return invalidOption(std::string("option '") + key + "' must be an integer");
  v = int(d);
  return Status::success();
}

Status readBool(const Napi::Object& o, const char* key, bool& v) {
  if (!o.Has(key)) return Status::success();
  Napi::Value x = o.Get(key);
  if (x.IsUndefined()) return Status::success();
  if (!x.IsBoolean()) return invalidOption(std::string("option '") + key + "' must be a boolean");
  v = x.As<Napi::Boolean>().Value();
  return Status::success();
}

}  // namespace

Status prepareOutputs(Napi::Env env, const Napi::Value& value, std::size_t n, bool accelerations, OutputArrays& out) {
  static const char* names[4] = {"potential", "ax", "ay", "az"};
  const int count = accelerations ? 4 : 1;
  const bool given = value.IsObject();
  double* ptr[4] = {nullptr, nullptr, nullptr, nullptr};
  for (int k = 0; k < count; ++k) {
    Napi::Float64Array a;
    if (given) {
      Napi::Value v = value.As<Napi::Object>().Get(names[k]);
      if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
        return Status::error(ErrorCode::InvalidInput, std::string("out.") + names[k] + " must be a Float64Array");
      a = v.As<Napi::Float64Array>();
      if (a.ElementLength() != n)
        return Status::error(ErrorCode::InvalidInput, std::string("out.") + names[k] + " has " +
                                                          std::to_string(a.ElementLength()) + " elements, expected " +
                                                          std::to_string(n) + " (one per cell)");
    } else {
      a = Napi::Float64Array::New(env, n);
    }
    ptr[k] = a.Data();
    out.refs.push_back(Napi::Persistent(a));
  }
  out.targets = ResultTargets{ptr[0], ptr[1], ptr[2], ptr[3]};
  return Status::success();
}

Status readCells(const Napi::Object& obj, CellArrays& out) {
  static const char* names[5] = {"x", "y", "z", "mass", "size"};
  const double* ptr[5];
  std::size_t n = 0;
  for (int k = 0; k < 5; ++k) {
    Napi::Value v = obj.Get(names[k]);
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
      return Status::error(ErrorCode::InvalidInput, std::string("cells.") + names[k] + " must be a Float64Array");
    Napi::Float64Array a = v.As<Napi::Float64Array>();
    if (k == 0) n = a.ElementLength();
    else if (a.ElementLength() != n)
      return Status::error(ErrorCode::InvalidInput, std::string("mismatched array lengths: cells.x has ") +
                                                        std::to_string(n) + " elements but cells." + names[k] +
                                                        " has " + std::to_string(a.ElementLength()));
    ptr[k] = a.Data();
    out.refs.push_back(Napi::Persistent(a));
  }
  if (n > 0xffffffffull) return Status::error(ErrorCode::InvalidInput, "more than 2^32 - 1 cells on one rank");
  out.view = CellsView{ptr[0], ptr[1], ptr[2], ptr[3], ptr[4], n};
  return Status::success();
}

namespace {

/// system.particles into out.particles (the arrays kept alive in out.refs).
Status readParticles(const Napi::Value& value, SystemArrays& out) {
  auto bad = [](const std::string& m) { return Status::error(ErrorCode::InvalidInput, m); };
  if (!value.IsObject()) return bad("particles must be an object {x, y, z, mass, softening}");
  const Napi::Object o = value.As<Napi::Object>();
  static const char* names[5] = {"x", "y", "z", "mass", "softening"};
  const double* ptr[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  std::size_t n = 0;
  ParticlesView& p = out.particles;
  p = ParticlesView{};
  for (int k = 0; k < 5; ++k) {
    const Napi::Value v = o.Get(names[k]);
    if (k == 4 && v.IsNumber()) {  // one softening for all
      p.softeningValue = v.As<Napi::Number>().DoubleValue();
      continue;
    }
    if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
      return bad(std::string("particles.") + names[k] + " must be a Float64Array" + (k == 4 ? " or a number" : ""));
    Napi::Float64Array a = v.As<Napi::Float64Array>();
    if (k == 0) n = a.ElementLength();
    else if (a.ElementLength() != n)
      return bad("mismatched array lengths: particles.x has " + std::to_string(n) + " elements but particles." +
                 names[k] + " has " + std::to_string(a.ElementLength()));
    ptr[k] = a.Data();
    out.refs.push_back(Napi::Persistent(a.As<Napi::TypedArray>()));
  }
  if (n > 0xffffffffull) return bad("more than 2^32 - 1 particles on one rank");
  p.x = ptr[0];
  p.y = ptr[1];
  p.z = ptr[2];
  p.mass = ptr[3];
  p.softening = ptr[4];
  p.n = n;
  return Status::success();
}

}  // namespace

Status readSystemParts(const Napi::Object& system, SystemArrays& out) {
  const Napi::Value particles = system.Get("particles");
  if (!particles.IsUndefined() && !particles.IsNull()) AG_TRY(readParticles(particles, out));
  const Napi::Value probes = system.Get("probes");
  if (!probes.IsUndefined() && !probes.IsNull()) {
    if (!probes.IsObject()) return Status::error(ErrorCode::InvalidInput, "probes must be an object {x, y, z}");
    static const char* names[3] = {"x", "y", "z"};
    const double* ptr[3];
    std::size_t n = 0;
    for (int k = 0; k < 3; ++k) {
      Napi::Value v = probes.As<Napi::Object>().Get(names[k]);
      if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
        return Status::error(ErrorCode::InvalidInput, std::string("probes.") + names[k] + " must be a Float64Array");
      Napi::Float64Array a = v.As<Napi::Float64Array>();
      if (k == 0) n = a.ElementLength();
      else if (a.ElementLength() != n)
        return Status::error(ErrorCode::InvalidInput, std::string("mismatched array lengths: probes.x has ") +
                                                          std::to_string(n) + " elements but probes." + names[k] +
                                                          " has " + std::to_string(a.ElementLength()));
      ptr[k] = a.Data();
      out.refs.push_back(Napi::Persistent(a.As<Napi::TypedArray>()));
    }
    if (n > 0xffffffffull) return Status::error(ErrorCode::InvalidInput, "more than 2^32 - 1 probes on one rank");
    out.probes = PointsView{ptr[0], ptr[1], ptr[2], n};
  }
  const Napi::Value targets = system.Get("targets");
  if (!targets.IsUndefined() && !targets.IsNull()) {
    if (!targets.IsTypedArray() || targets.As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
      return Status::error(ErrorCode::InvalidInput, "targets must be a Uint32Array of cell indices");
    Napi::Uint32Array a = targets.As<Napi::Uint32Array>();
    out.targets = a.Data();
    out.targetCount = a.ElementLength();
    static const std::uint32_t none = 0;  // an empty list is a subset (of no cells), not "every cell"
    if (!out.targets) out.targets = &none;
    out.refs.push_back(Napi::Persistent(a.As<Napi::TypedArray>()));
  }
  return Status::success();
}

Status readBlocks(const Napi::Value& value, const Napi::Value& outValue, const SolveOptions& opt, BlockArrays& b) {
  auto bad = [](const std::string& m) { return Status::error(ErrorCode::InvalidInput, m); };
  if (!value.IsObject()) return bad("blocks must be an object {nxb, nyb, nzb, lo, dx, density, ...}");
  Napi::Object o = value.As<Napi::Object>();
  BlocksView& v = b.view;
  v = BlocksView{};
  auto typed = [&](const char* key, napi_typedarray_type type, const char* typeName, bool optional,
                   Napi::TypedArray& a) -> Status {
    Napi::Value x = o.Get(key);
    if (optional && (x.IsUndefined() || x.IsNull())) return Status::success();
    if (!x.IsTypedArray() || x.As<Napi::TypedArray>().TypedArrayType() != type)
      return bad(std::string("blocks.") + key + " must be a " + typeName);
    a = x.As<Napi::TypedArray>();
    b.refs.push_back(Napi::Persistent(a));
    return Status::success();
  };
  const char* dims[3] = {"nxb", "nyb", "nzb"};
  int* dimsOut[3] = {&v.nxb, &v.nyb, &v.nzb};
  for (int d = 0; d < 3; ++d) {
    Napi::Value x = o.Get(dims[d]);
    if (!x.IsNumber() || x.As<Napi::Number>().DoubleValue() != double(x.As<Napi::Number>().Int32Value()))
      return bad(std::string("blocks.") + dims[d] + " must be an integer");
    *dimsOut[d] = x.As<Napi::Number>().Int32Value();
  }
  Napi::TypedArray lo, dx, index, density;
  AG_TRY(typed("lo", napi_float64_array, "Float64Array (3 per block)", false, lo));
  AG_TRY(typed("dx", napi_float64_array, "Float64Array (3 per block)", false, dx));
  AG_TRY(typed("blockIndex", napi_int32_array, "Int32Array", true, index));
  Napi::Value dv = o.Get("density");
  const bool f32 = dv.IsTypedArray() && dv.As<Napi::TypedArray>().TypedArrayType() == napi_float32_array;
  AG_TRY(typed("density", f32 ? napi_float32_array : napi_float64_array, "Float64Array or Float32Array", false,
               density));
  if (lo.ElementLength() % 3 != 0 || dx.ElementLength() != lo.ElementLength())
    return bad("blocks.lo and blocks.dx must hold 3 numbers per block (lengths " + std::to_string(lo.ElementLength()) +
               " and " + std::to_string(dx.ElementLength()) + ")");
  v.nBlocks = lo.ElementLength() / 3;
  v.lo = lo.As<Napi::Float64Array>().Data();
  v.dx = dx.As<Napi::Float64Array>().Data();
  if (!index.IsEmpty()) {
    if (index.ElementLength() != v.nBlocks)
      return bad("blocks.blockIndex has " + std::to_string(index.ElementLength()) + " elements for " +
                 std::to_string(v.nBlocks) + " blocks");
    v.blockIndex = index.As<Napi::Int32Array>().Data();
  }
  v.dtype = f32 ? DType::Float32 : DType::Float64;
  v.density = f32 ? static_cast<const void*>(density.As<Napi::Float32Array>().Data())
                  : static_cast<const void*>(density.As<Napi::Float64Array>().Data());
  Napi::Value g = o.Get("guard");
  if (!g.IsUndefined() && !g.IsNull()) {
    if (g.IsNumber()) {
      for (int d = 0; d < 3; ++d) v.guard[d] = g.As<Napi::Number>().Int32Value();
    } else if (g.IsArray() && g.As<Napi::Array>().Length() == 3) {
      for (uint32_t d = 0; d < 3; ++d) v.guard[d] = g.As<Napi::Array>().Get(d).As<Napi::Number>().Int32Value();
    } else {
      return bad("blocks.guard must be a number or [gx, gy, gz]");
    }
  }
  double stride = 1, blockStride = 0;
  AG_TRY(readNumber(o, "varStride", stride));
  AG_TRY(readNumber(o, "blockStride", blockStride));
  if (!(stride >= 1 && stride == double(std::size_t(stride))) || !(blockStride >= 0 && blockStride == double(std::size_t(blockStride))))
    return invalidOption("blocks.varStride and blocks.blockStride must be non-negative integers (varStride >= 1)");
  v.varStride = std::size_t(stride);
  v.blockStride = std::size_t(blockStride);
  AG_TRY(readBool(o, "meshChanged", v.meshChanged));
  // the outputs: the density's type
  static const char* names[4] = {"potential", "ax", "ay", "az"};
  void** outPtr[4] = {&b.out.potential, &b.out.ax, &b.out.ay, &b.out.az};
  const std::size_t need = v.nBlocks > 0 && v.nxb > 0 && v.nyb > 0 && v.nzb > 0 ? 1 : 0;
  std::vector<std::pair<std::string, std::size_t>> lengths;
  lengths.emplace_back("blocks.density", density.ElementLength());
  const int count = opt.accelerations ? 4 : 1;
  if (!outValue.IsObject()) return bad("out must be {potential, ax?, ay?, az?}: the arrays the results are written into");
  for (int k = 0; k < count; ++k) {
    Napi::Value x = outValue.As<Napi::Object>().Get(names[k]);
    if (!x.IsTypedArray() || x.As<Napi::TypedArray>().TypedArrayType() != (f32 ? napi_float32_array : napi_float64_array))
      return bad(std::string("out.") + names[k] + " must be a " + (f32 ? "Float32Array" : "Float64Array") +
                 " (the density's type)");
    Napi::TypedArray a = x.As<Napi::TypedArray>();
    b.refs.push_back(Napi::Persistent(a));
    *outPtr[k] = f32 ? static_cast<void*>(a.As<Napi::Float32Array>().Data())
                     : static_cast<void*>(a.As<Napi::Float64Array>().Data());
    lengths.emplace_back(std::string("out.") + names[k], a.ElementLength());
  }
  AG_TRY(validateBlocks(v, b.out, opt));
  if (need) {
    const std::size_t want = blockFieldElements(v);
    for (const auto& l : lengths)
      if (l.second < want)
        return bad(l.first + " has " + std::to_string(l.second) + " elements; the blocks' layout reads or "
                   "writes up to element " + std::to_string(want - 1));
  }
  return Status::success();
}

Status readOptions(const Napi::Value& value, SolveOptions& opt, std::string& backend) {
  backend = "cpu";
  if (value.IsUndefined() || value.IsNull()) return Status::success();
  if (!value.IsObject()) return invalidOption("options must be an object");
  Napi::Object o = value.As<Napi::Object>();
  Status st;
  if (!(st = readNumber(o, "theta", opt.theta)).ok()) return st;
  if (!(st = readInt(o, "fmmOrder", opt.fmmOrder)).ok()) return st;
  if (!(st = readNumber(o, "fmmTheta", opt.fmmTheta)).ok()) return st;
  if (!(st = readNumber(o, "fmmTolerance", opt.fmmTolerance)).ok()) return st;
  if (!(st = readNumber(o, "fmmAccelTolerance", opt.fmmAccelTolerance)).ok()) return st;
  if (o.Has("method") && !o.Get("method").IsUndefined()) {
    Napi::Value m = o.Get("method");
    std::string v = m.IsString() ? m.As<Napi::String>().Utf8Value() : std::string();
    if (v == "tree") opt.method = SolveMethod::Tree;
    else if (v == "fmm") opt.method = SolveMethod::Fmm;
    else return invalidOption("option 'method' must be 'tree' or 'fmm'");
  }
  if (!(st = readInt(o, "order", opt.order)).ok()) return st;
  if (!(st = readNumber(o, "G", opt.G)).ok()) return st;
  if (!(st = readInt(o, "leafSize", opt.leafSize)).ok()) return st;
  if (!(st = readInt(o, "groupSize", opt.groupSize)).ok()) return st;
  if (!(st = readBool(o, "accelerations", opt.accelerations)).ok()) return st;
  if (!(st = readInt(o, "threads", opt.threads)).ok()) return st;
  if (!(st = readInt(o, "ewaldResolution", opt.ewaldResolution)).ok()) return st;
  if (!(st = readBool(o, "ewaldExpansion", opt.ewaldExpansion)).ok()) return st;
  if (!(st = readBool(o, "densityContrast", opt.densityContrast)).ok()) return st;
  {
    double minCells = double(opt.autoGpuMinCells);
    if (!(st = readNumber(o, "autoGpuMinCells", minCells)).ok()) return st;
    if (!(minCells >= 0 && minCells <= 9.0e15 && minCells == double(std::size_t(minCells))))
      return invalidOption("option 'autoGpuMinCells' must be a non-negative integer");
    opt.autoGpuMinCells = std::size_t(minCells);
  }
  if (o.Has("periodic") && !o.Get("periodic").IsUndefined()) {
    Napi::Value p = o.Get("periodic");
    if (!p.IsArray() || p.As<Napi::Array>().Length() != 3)
      return invalidOption("option 'periodic' must be [x, y, z] booleans");
    for (uint32_t d = 0; d < 3; ++d) {
      Napi::Value e = p.As<Napi::Array>().Get(d);
      if (!e.IsBoolean()) return invalidOption("option 'periodic' must be [x, y, z] booleans");
      opt.periodic[d] = e.As<Napi::Boolean>().Value();
    }
  }
  if (o.Has("mac") && !o.Get("mac").IsUndefined()) {
    Napi::Value m = o.Get("mac");
    std::string s = m.IsString() ? m.As<Napi::String>().Utf8Value() : std::string();
    if (s == "barnes") opt.mac = MacKind::Barnes;
    else if (s == "bonsai") opt.mac = MacKind::Bonsai;
    else return invalidOption("option 'mac' must be 'barnes' or 'bonsai'");
  }
  if (o.Has("selfPotential") && !o.Get("selfPotential").IsUndefined()) {
    Napi::Value m = o.Get("selfPotential");
    std::string v = m.IsString() ? m.As<Napi::String>().Utf8Value() : std::string();
    if (v == "none") opt.selfPotential = SelfPotential::None;
    else if (v == "cube") opt.selfPotential = SelfPotential::Cube;
    else if (v == "lattice") opt.selfPotential = SelfPotential::Lattice;
    else return invalidOption("option 'selfPotential' must be 'none', 'cube' or 'lattice'");
  }
  if (o.Has("softening") && !o.Get("softening").IsUndefined()) {
    Napi::Value m = o.Get("softening");
    std::string v = m.IsString() ? m.As<Napi::String>().Utf8Value() : std::string();
    if (v == "spline") opt.softening = SofteningKernel::Spline;
    else if (v == "plummer") opt.softening = SofteningKernel::Plummer;
    else return invalidOption("option 'softening' must be 'spline' or 'plummer'");
  }
  if (o.Has("walk") && !o.Get("walk").IsUndefined()) {
    Napi::Value m = o.Get("walk");
    std::string w = m.IsString() ? m.As<Napi::String>().Utf8Value() : std::string();
    if (w == "box") opt.walk = WalkKind::Box;
    else if (w == "vote") opt.walk = WalkKind::Vote;
    else return invalidOption("option 'walk' must be 'box' or 'vote'");
  }
  if (o.Has("backend") && !o.Get("backend").IsUndefined()) {
    Napi::Value b = o.Get("backend");
    backend = b.IsString() ? b.As<Napi::String>().Utf8Value() : std::string();
    if (backend != "auto" && backend != "cpu" && backend != "cuda")
      return invalidOption("option 'backend' must be 'auto', 'cpu' or 'cuda'");
  }
  if (o.Has("box") && !o.Get("box").IsUndefined()) {
    Napi::Value b = o.Get("box");
    if (!b.IsObject()) return invalidOption("option 'box' must be {lo: [x, y, z], hi: [x, y, z]}");
    Napi::Object bo = b.As<Napi::Object>();
    for (int side = 0; side < 2; ++side) {
      Napi::Value arr = bo.Get(side == 0 ? "lo" : "hi");
      if (!arr.IsArray() || arr.As<Napi::Array>().Length() != 3)
        return invalidOption("option 'box' must be {lo: [x, y, z], hi: [x, y, z]}");
      for (uint32_t d = 0; d < 3; ++d) {
        Napi::Value e = arr.As<Napi::Array>().Get(d);
        if (!e.IsNumber()) return invalidOption("option 'box' coordinates must be numbers");
        (side == 0 ? opt.boxLo : opt.boxHi)[d] = e.As<Napi::Number>().DoubleValue();
      }
    }
    opt.hasBox = true;
  }
  return Status::success();
}

Status readDistributed(const Napi::Value& value, bool& distributed) {
  distributed = false;
  if (!value.IsObject()) return Status::success();
  return readBool(value.As<Napi::Object>(), "distributed", distributed);
}

Napi::Error makeError(Napi::Env env, const Status& st) {
  Napi::Error e = Napi::Error::New(env, st.message);
  e.Set("code", Napi::String::New(env, errorCodeName(st.code)));
  return e;
}

Napi::Object arraysToJs(Napi::Env env, const OutputArrays& arrays) {
  static const char* names[4] = {"potential", "ax", "ay", "az"};
  Napi::Object o = Napi::Object::New(env);
  for (std::size_t k = 0; k < arrays.refs.size(); ++k) o.Set(names[k], arrays.refs[k].Value());
  return o;
}

Napi::Object statsToJs(Napi::Env env, const SolveStats& t, const char* backend) {
  Napi::Object s = Napi::Object::New(env);
  s.Set("backend", backend);
  s.Set("threads", t.threads);
  s.Set("secondsKeys", t.secondsKeys);
  s.Set("secondsBuild", t.secondsBuild);
  s.Set("secondsMoments", t.secondsMoments);
  s.Set("secondsWalk", t.secondsWalk);
  s.Set("secondsTotal", t.secondsTotal);
  s.Set("secondsUpload", t.secondsUpload);
  s.Set("secondsDownload", t.secondsDownload);
  s.Set("deviceBytesPerCell", t.deviceBytesPerCell);
  s.Set("approxInteractions", double(t.approxInteractions));
  s.Set("directInteractions", double(t.directInteractions));
  s.Set("nodes", double(t.nodes));
  s.Set("leaves", double(t.leaves));
  s.Set("groups", double(t.groups));
  s.Set("treeDepth", t.treeDepth);
  s.Set("secondsEwaldTable", t.secondsEwaldTable);
  static const char* sources[4] = {"none", "memory", "disk", "built"};
  s.Set("ewaldTableSource", sources[t.ewaldTableSource & 3]);
  if (!t.ewaldCacheWarning.empty()) s.Set("ewaldCacheWarning", t.ewaldCacheWarning);
  s.Set("densityContrast", t.densityContrast);
  s.Set("meanDensity", t.meanDensity);
  s.Set("meanPotential", t.meanPotential);
  s.Set("treeReused", t.treeReused);
  if (t.distributed.ranks > 1) s.Set("distributed", distributedStatsToJs(env, t.distributed));
  return s;
}

Napi::Object resultToJs(Napi::Env env, const SolveResult& r, const char* backend, const OutputArrays& arrays) {
  Napi::Object o = arraysToJs(env, arrays);
  o.Set("stats", statsToJs(env, r.stats, backend));
  return o;
}

}  // namespace amrgrav
