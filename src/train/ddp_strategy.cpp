// DDPStrategy: the Trainer's seam (strategy.h) filled with DistributedDataParallel and the
// world communicator.
#include "athanor/train/ddp_strategy.h"

#include "athanor/core/error.h"
#include "athanor/data/loader_base.h"
#include "athanor/dist/world.h"
#include "athanor/ops/creation.h"
#include "athanor/train/training_module.h"

namespace ath::train {

DDPStrategy::DDPStrategy(dist::DDPOptions options, int zero_stage)
    : options_(options),
      zero_stage_(zero_stage),
      comm_(options.communicator ? *options.communicator : dist::world()) {
  ATH_CHECK(zero_stage == 0 || zero_stage == 1, ValueError,
            "DDPStrategy: zero_stage must be 0 (plain DDP) or 1 (sharded optimizer state), got {}",
            zero_stage);
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
  ddp_.reset();  // a second fit: the old wrapper's hooks go first
  ddp_ = std::make_unique<dist::DistributedDataParallel>(module, options_);
  zero_.reset();
  if (zero_stage_ == 1) zero_ = std::make_unique<dist::ZeroRedundancyOptimizer>(optimizer, &comm_);
}

// The wrapper is used only with the optimizer it was built on (a checkpoint restored outside
// fit, before setup, takes the unsharded path).
void DDPStrategy::before_optimizer_step(optim::Optimizer& optimizer) {
  if (zero_ && &zero_->optimizer() == &optimizer) zero_->prepare_step();
}

void DDPStrategy::after_optimizer_step(optim::Optimizer& optimizer) {
  if (zero_ && &zero_->optimizer() == &optimizer) zero_->finish_step();
}

optim::OptimizerState DDPStrategy::optimizer_state_dict(optim::Optimizer& optimizer) {
  if (zero_ && &zero_->optimizer() == &optimizer) return zero_->consolidated_state_dict();
  return optimizer.state_dict();
}

void DDPStrategy::load_optimizer_state_dict(optim::Optimizer& optimizer,
                                            const optim::OptimizerState& state) {
  if (zero_ && &zero_->optimizer() == &optimizer) {
    zero_->load_state_dict(state);
  } else {
    optimizer.load_state_dict(state);
  }
}

void DDPStrategy::before_backward(bool sync) {
  if (ddp_) ddp_->set_require_gradient_sync(sync);
}

void DDPStrategy::after_replayed_backward() {
  if (ddp_) ddp_->gradients_ready();
}

void DDPStrategy::replayed_gradient_ready(const Tensor& parameter) {
  if (ddp_) ddp_->gradient_ready(parameter);
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

std::vector<double> DDPStrategy::reduce(const std::vector<double>& values, Reduce op,
                                        const std::string& name) {
  if (comm_.world_size() == 1) return values;
  Tensor t = from_vector<double>(values);
  const dist::ReduceOp dist_op = op == Reduce::Mean  ? dist::ReduceOp::Mean
                                 : op == Reduce::Sum ? dist::ReduceOp::Sum
                                 : op == Reduce::Max ? dist::ReduceOp::Max
                                                     : dist::ReduceOp::Min;
  comm_.allreduce(t, dist_op, "Trainer.log " + name).wait();
  return t.to_vector<double>();
}

std::shared_ptr<Strategy> make_strategy(const std::string& name) {
  if (name == "auto" || name == "single_device") return std::make_shared<SingleDeviceStrategy>();
  ATH_CHECK(name == "ddp" || name == "ddp_zero1", ValueError,
            "Trainer: unknown strategy '{}' (expected 'auto', 'single_device', 'ddp' or "
            "'ddp_zero1')",
            name);
  return std::make_shared<DDPStrategy>(dist::DDPOptions{}, name == "ddp_zero1" ? 1 : 0);
}

}  // namespace ath::train
