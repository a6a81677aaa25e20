// Strategy: where training runs (Lightning's strategy). It knows the processes taking part
// (world size, this one's global rank) and does what fit needs of them: prepare the module
// before training (a data-parallel strategy broadcasts rank 0's weights), reduce the gradients
// of each accumulation window before clipping, wait for every rank (barrier) and send a tensor
// from one rank to all (broadcast). The Trainer writes checkpoints and logs, and shows its
// progress bar, on global rank 0 only. SingleDeviceStrategy (the default) is one process, where
// each of these is nothing; the data-parallel strategy plugs in here.
//
//   #include "athanor/train/trainer.h"
//   train::Trainer trainer;                    // SingleDeviceStrategy
//   assert(trainer.strategy().world_size() == 1 && trainer.is_global_zero());
//   Tensor t = trainer.strategy().broadcast(ones({2}));   // one rank: t itself
#pragma once

#include <concepts>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"
#include "athanor/train/logged_metrics.h"

namespace ath::data {
class BatchSource;
}

namespace ath::train {

class TrainingModule;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;  // "single_device", "ddp", ...
  virtual int64_t world_size() const { return 1; }
  virtual int64_t global_rank() const { return 0; }
  bool is_global_zero() const { return global_rank() == 0; }
  // Before fit counts the training batches: a data-parallel strategy gives each rank its share
  // of the samples (a DistributedSampler in place of a DataLoader's own sampler).
  virtual void prepare_train_source(data::BatchSource& source) { (void)source; }
  // Once fit has the module and its optimizer, before any step or checkpoint restore.
  virtual void setup(TrainingModule& module, optim::Optimizer& optimizer) {
    (void)module;
    (void)optimizer;
  }
  // Before each backward of automatic optimization: `sync` is false for the micro-batches of
  // an accumulation window before its last, whose gradients need only accumulate locally (a
  // data-parallel strategy then skips communication, as DDP's no_sync).
  virtual void before_backward(bool sync) { (void)sync; }
  // After a backward that ran as a compiled replay (TrainerOptions::compile): the gradients are
  // in place but no autograd hook saw them arrive; a data-parallel strategy starts reducing them
  // now (DDP: every bucket's all-reduce, in order).
  virtual void after_replayed_backward() {}
  // During a compiled replay of the backward: `parameter`'s gradient is final (the replay's
  // stand-in for a post-accumulate hook; a data-parallel strategy starts its all-reduce).
  virtual void replayed_gradient_ready(const Tensor& parameter) { (void)parameter; }
  // After the last backward of an accumulation window, before clipping and the optimizer step.
  virtual void reduce_gradients(optim::Optimizer& optimizer) { (void)optimizer; }
  // Around the optimizer's step, after clipping (every rank calls both, whether or not a loss
  // scaler skips the step): a sharded-optimizer strategy (ZeRO-1) sets aside the gradients of
  // the parameters other ranks update, then sends each rank's updated share to every rank.
  virtual void before_optimizer_step(optim::Optimizer& optimizer) { (void)optimizer; }
  virtual void after_optimizer_step(optim::Optimizer& optimizer) { (void)optimizer; }
  // The optimizer's state for a checkpoint (called on every rank: a sharded strategy gathers
  // the full state) and its restore (a sharded strategy keeps this rank's share).
  virtual optim::OptimizerState optimizer_state_dict(optim::Optimizer& optimizer) {
    return optimizer.state_dict();
  }
  virtual void load_optimizer_state_dict(optim::Optimizer& optimizer,
                                         const optim::OptimizerState& state) {
    optimizer.load_state_dict(state);
  }
  // Returns once every rank has called it with the same name.
  virtual void barrier(const std::string& name = {}) { (void)name; }
  // Rank src's tensor, on every rank.
  virtual Tensor broadcast(const Tensor& tensor, int64_t src = 0) {
    (void)src;
    return tensor;
  }
  // The element-wise reduction of every rank's `values` (Mean: over ranks), on every rank:
  // what log(..., sync_dist = true) uses. `name` names the collective.
  virtual std::vector<double> reduce(const std::vector<double>& values, Reduce op,
                                     const std::string& name) {
    (void)op;
    (void)name;
    return values;
  }
};

// One process, one device.
class SingleDeviceStrategy : public Strategy {
 public:
  std::string name() const override { return "single_device"; }
};

// TrainerOptions::strategy, as Lightning's: a name ("auto" or "single_device": one process;
// "ddp": DDPStrategy on dist::world(), see ddp_strategy.h; "ddp_zero1": the same with the
// optimizer state sharded, ZeRO stage 1) or a Strategy object.
struct StrategyChoice {
  StrategyChoice() = default;
  StrategyChoice(const char* strategy_name) : name(strategy_name) {}
  StrategyChoice(std::string strategy_name) : name(std::move(strategy_name)) {}
  template <class S>
  requires std::derived_from<S, Strategy> StrategyChoice(std::shared_ptr<S> strategy)
      : object(std::move(strategy)) {}

  std::string name = "auto";
  std::shared_ptr<Strategy> object;  // when set, used instead of `name`
};

// The strategy a name selects: "auto"/"single_device", "ddp" or "ddp_zero1" (ValueError
// otherwise).
std::shared_ptr<Strategy> make_strategy(const std::string& name);

}  // namespace ath::train
