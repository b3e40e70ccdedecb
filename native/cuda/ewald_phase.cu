/// \file ewald_phase.cu
/// \brief The Ewald phase of a periodic solve (ewald_phase.h).
#include <vector>

#include "core/thread_pool.h"
#include "cuda/device_state.h"
#include "cuda/ewald_phase.h"
#include "ewald/walk_setup.h"

namespace amrgrav {
namespace cuda {

Status prepareEwald(DeviceState& ds, const SolveOptions& opt, double scale, SolveStats& st) {
  EwaldWalk ew;
  AG_TRY(prepareEwaldTable(opt, scale, resolveThreadCount(opt.threads), ew, st));
  if (ew.table.get() != ds.ewaldTable.get()) {
    const std::vector<double>& c = ew.table->coef;
    std::vector<float> f(c.begin(), c.end());
    AG_TRY(ds.ewaldCoef.reserve(f.size(), "the Ewald table"));
    AG_CUDA_TRY(cudaMemcpyAsync(ds.ewaldCoef.get(), f.data(), f.size() * sizeof(float), cudaMemcpyHostToDevice,
                                ds.stream));
    AG_CUDA_TRY(cudaStreamSynchronize(ds.stream));  // f is freed on return
    ds.ewaldTable = ew.table;
  }
  ds.ewaldView = ew.view.over<float>(ds.ewaldCoef.get());
  return Status::success();
}

}  // namespace cuda
}  // namespace amrgrav
