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

Status readOptions(const Napi::Value& value, SolveOptions& opt, std::string& backend) {
  backend = "cpu";
  if (value.IsUndefined() || value.IsNull()) return Status::success();
  if (!value.IsObject()) return invalidOption("options must be an object");
  Napi::Object o = value.As<Napi::Object>();
  Status st;
  if (!(st = readNumber(o, "theta", opt.theta)).ok()) return st;
  if (!(st = readInt(o, "order", opt.order)).ok()) return st;
  if (!(st = readNumber(o, "G", opt.G)).ok()) return st;
  if (!(st = readInt(o, "leafSize", opt.leafSize)).ok()) return st;
  if (!(st = readInt(o, "groupSize", opt.groupSize)).ok()) return st;
  if (!(st = readBool(o, "accelerations", opt.accelerations)).ok()) return st;
  if (!(st = readInt(o, "threads", opt.threads)).ok()) return st;
  if (!(st = readInt(o, "ewaldResolution", opt.ewaldResolution)).ok()) return st;
  if (!(st = readBool(o, "ewaldExpansion", opt.ewaldExpansion)).ok()) return st;
  if (!(st = readBool(o, "densityContrast", opt.densityContrast)).ok()) return st;
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

Napi::Object resultToJs(Napi::Env env, const SolveResult& r, const char* backend, const OutputArrays& arrays) {
  static const char* names[4] = {"potential", "ax", "ay", "az"};
  Napi::Object o = Napi::Object::New(env);
  for (std::size_t k = 0; k < arrays.refs.size(); ++k) o.Set(names[k], arrays.refs[k].Value());
  Napi::Object s = Napi::Object::New(env);
  const SolveStats& t = r.stats;
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
  if (t.distributed.ranks > 1) s.Set("distributed", distributedStatsToJs(env, t.distributed));
  o.Set("stats", s);
  return o;
}

}  // namespace amrgrav
