// DDPStrategy: the Trainer's seam (strategy.h) filled with DistributedDataParallel and the
// world communicator.
#include "athanor/train/ddp_strategy.h"

#include "athanor/core/error.h"
#include "athanor/data/loader_base.h"
#include "athanor/dist/world.h"
#include "athanor/train/training_module.h"

namespace ath::train {

DDPStrategy::DDPStrategy(dist::DDPOptions options)
    : options_(options), comm_(options.communicator ? *options.communicator : dist::world()) {
  options_.communicator = &comm_;
}

int64_t DDPStrategy::world_size() const { return comm_.world_size(); }
int64_t DDPStrategy::global_rank() const { return comm_.rank(); }

void DDPStrategy::prepare_train_source(data::BatchSource& source) {
  if (comm_.world_size() == 1) return;
  auto* loader = dynamic_cast<data::detail::LoaderBase*>(&source);
  if (loader == nullptr) return;  // a BatchSource of the user's: it shards itself
  const std::shared_ptr<data::Sampler> current = loader->sampler_ptr();
  if (dynamic_cast<const data::DistributedSampler*>(current.get()) != nullptr) return;
  const bool shuffled = dynamic_cast<const data::RandomSampler*>(current.get()) != nullptr;
  const bool sequential = dynamic_cast<const data::SequentialSampler*>(current.get()) != nullptr;
  if (!shuffled && !sequential) return;  // a sampler of the user's: their sharding
  loader->set_sampler(std::make_shared<data::DistributedSampler>(
      current->size(), data::DistributedSamplerOptions{.num_replicas = comm_.world_size(),
                                                       .rank = comm_.rank(),
                                                       .shuffle = shuffled,
                                                       .seed = loader->seed()}));
}

void DDPStrategy::setup(TrainingModule& module, optim::Optimizer& optimizer) {
  (void)optimizer;
  ddp_.reset();  // a second fit: the old wrapper's hooks go first
  ddp_ = std::make_unique<dist::DistributedDataParallel>(module, options_);
}

void DDPStrategy::before_backward(bool sync) {
  if (ddp_) ddp_->set_require_gradient_sync(sync);
}

void DDPStrategy::reduce_gradients(optim::Optimizer& optimizer) {
  (void)optimizer;
  if (!ddp_) return;
  ddp_->finish_gradient_sync();
  ddp_->set_require_gradient_sync(true);
  if (options_.broadcast_buffers) ddp_->sync_buffers();
}

void DDPStrategy::barrier(const std::string& name) {
  comm_.barrier(name.empty() ? "Trainer.barrier" : name).wait();
}

Tensor DDPStrategy::broadcast(const Tensor& tensor, int64_t src) {
  if (comm_.world_size() == 1) return tensor;
  Tensor out = tensor.detach().contiguous().clone();
  comm_.broadcast(out, static_cast<int>(src), "Trainer.broadcast").wait();
  return out;
}

std::shared_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "auto" || name == "single_device") return std::make_shared<SingleDeviceStrategy>();
  ATH_CHECK(name == "ddp", ValueError,
            "Trainer: unknown strategy '{}' (expected 'auto', 'single_device' or 'ddp')", name);
  return std::make_shared<DDPStrategy>();
}

}  // namespace ath::train
