// SyncBatchNorm and convert_sync_batchnorm: a BatchNorm with a BatchNormSync that routes its
// training forwards through sync_batch_norm over a communicator.
#include <fmt/format.h>

#include "athanor/core/error.h"
#include "athanor/dist/sync_batch_norm.h"
#include "athanor/dist/world.h"
#include "athanor/ops/ops.h"

namespace ath::dist {

namespace {

class GroupStatistics final : public nn::BatchNormSync {
 public:
  explicit GroupStatistics(Communicator* comm) : comm_(comm) {}

  Tensor forward(const nn::BatchNorm& layer, const Tensor& x, double factor) override {
    const nn::BatchNormOptions& o = layer.options;
    // The layer's name in errors and in the collectives' names: "BatchNorm2d(32)".
    const std::string name = fmt::format("{}({})", layer.type_name(), o.features);
    ATH_CHECK(x.dim() >= 2 && x.shape()[1] == o.features, ShapeError,
              "{}: expected input with {} channels in dim 1, got input of shape {}", name,
              o.features, to_string(x.shape()));
    Communicator& comm = comm_ != nullptr ? *comm_ : world();
    const Tensor running_mean = o.track_running_stats ? layer.running_mean : Tensor();
    const Tensor running_var = o.track_running_stats ? layer.running_var : Tensor();
    if (comm.world_size() == 1) {  // nothing to share: the local op, bit for bit BatchNorm
      return batch_norm(x, running_mean, running_var, layer.weight, layer.bias, true, factor,
                        o.eps);
    }
    return sync_batch_norm(x, running_mean, running_var, layer.weight, layer.bias, factor, o.eps,
                           comm, name);
  }

 private:
  Communicator* comm_;
};

}  // namespace

SyncBatchNorm::SyncBatchNorm(nn::BatchNormOptions options, Communicator* comm)
    : nn::BatchNorm("SyncBatchNorm", options) {
  set_sync(std::make_shared<GroupStatistics>(comm));
}

void SyncBatchNorm::check_input_dim(const Tensor& x) const {
  ATH_CHECK(x.dim() >= 2, ShapeError,
            "SyncBatchNorm({}): expected at least 2-D input [N, C, *], got {}-D input of shape {}",
            options.features, x.dim(), ath::to_string(x.shape()));
}

int convert_sync_batchnorm(nn::Module& root, Communicator* comm) {
  auto sync = std::make_shared<GroupStatistics>(comm);
  int converted = 0;
  for (nn::Module* m : root.modules()) {
    if (auto* bn = dynamic_cast<nn::BatchNorm*>(m)) {
      bn->set_sync(sync);
      ++converted;
    }
  }
  return converted;
}

}  // namespace ath::dist
