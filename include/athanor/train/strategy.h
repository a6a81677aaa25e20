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

#include <cstdint>
#include <string>

#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"

namespace ath::train {

class TrainingModule;

class Strategy {
 public:
  virtual ~Strategy() = default;
  virtual std::string name() const = 0;  // "single_device", "ddp", ...
  virtual int64_t world_size() const { return 1; }
  virtual int64_t global_rank() const { return 0; }
  bool is_global_zero() const { return global_rank() == 0; }
  // Once fit has the module and its optimizer, before any step or checkpoint restore.
  virtual void setup(TrainingModule& module, optim::Optimizer& optimizer) {
    (void)module;
    (void)optimizer;
  }
  // After the last backward of an accumulation window, before clipping and the optimizer step.
  virtual void reduce_gradients(optim::Optimizer& optimizer) { (void)optimizer; }
  // Returns once every rank has called it with the same name.
  virtual void barrier(const std::string& name = {}) { (void)name; }
  // Rank src's tensor, on every rank.
  virtual Tensor broadcast(const Tensor& tensor, int64_t src = 0) {
    (void)src;
    return tensor;
  }
};

// One process, one device.
class SingleDeviceStrategy : public Strategy {
 public:
  std::string name() const override { return "single_device"; }
};

}  // namespace ath::train
