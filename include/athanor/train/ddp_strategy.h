// DDPStrategy: Lightning's strategy="ddp" — data-parallel training with one process per rank
// of dist::world() (start the program with `mpirun -n N`). Each rank holds a full replica of
// the module, wrapped in a dist::DistributedDataParallel at setup (rank 0's weights and
// buffers broadcast to all), and trains on its share of every batch: fit replaces a
// DataLoader's sequential or random sampler with a DistributedSampler (shuffled, with the
// loader's seed, when the loader shuffled), so with N ranks and batch_size B each optimizer
// step sees N x B samples, the gradients averaged over the ranks. Checkpoints, logs and the
// progress bar are rank 0's (the Trainer's rule for every strategy).
//
//   #include "athanor/dist/world.h"
//   #include "athanor/train/ddp_strategy.h"
//   #include "athanor/train/trainer.h"
//   train::TrainerOptions opts;
//   opts.strategy = "ddp";                      // or std::make_shared<train::DDPStrategy>(...)
//   train::Trainer trainer(opts);
//   assert(trainer.strategy().name() == "ddp");
//   assert(trainer.strategy().world_size() == dist::world().world_size());
//
// Gradient accumulation (accumulate_grad_batches) communicates only on the last micro-batch
// of each window (no_sync for the others). With broadcast_buffers, rank 0's buffers are sent
// to every rank after each gradient reduction, so every window's forward starts from them.
// Without mpirun the world has one process and this is the single-device loop, at no cost.
// A loader with a sampler of its own (other than sequential, random or distributed) is left
// alone: it must then give each rank its share itself.
//
// With zero_stage = 1 (strategy "ddp_zero1") the optimizer fit gets from configure_optimizers
// is wrapped in a dist::ZeroRedundancyOptimizer: each rank keeps and updates the state of its
// share of the parameters (~1/N), then the shares are broadcast; the steps are plain DDP's, bit
// for bit. Checkpoints hold the full (consolidated) optimizer state, so they resume a run with
// or without sharding, on any number of ranks.
#pragma once

#include <memory>
#include <string>

#include "athanor/dist/ddp.h"
#include "athanor/dist/zero_redundancy_optimizer.h"
#include "athanor/train/strategy.h"

namespace ath::train {

class DDPStrategy : public Strategy {
 public:
  // zero_stage: 0 (plain DDP) or 1 (sharded optimizer state); anything else is a ValueError.
  explicit DDPStrategy(dist::DDPOptions options = {}, int zero_stage = 0);

  std::string name() const override { return zero_stage_ == 1 ? "ddp_zero1" : "ddp"; }
  int64_t world_size() const override;
  int64_t global_rank() const override;
  void prepare_train_source(data::BatchSource& source) override;
  void setup(TrainingModule& module, optim::Optimizer& optimizer) override;
  void before_backward(bool sync) override;
  void after_replayed_backward() override;
  void replayed_gradient_ready(const Tensor& parameter) override;
  void reduce_gradients(optim::Optimizer& optimizer) override;
  void before_optimizer_step(optim::Optimizer& optimizer) override;
  void after_optimizer_step(optim::Optimizer& optimizer) override;
  optim::OptimizerState optimizer_state_dict(optim::Optimizer& optimizer) override;
  void load_optimizer_state_dict(optim::Optimizer& optimizer,
                                 const optim::OptimizerState& state) override;
  void barrier(const std::string& name = {}) override;
  Tensor broadcast(const Tensor& tensor, int64_t src = 0) override;
  std::vector<double> reduce(const std::vector<double>& values, Reduce op,
                             const std::string& name) override;

  dist::Communicator& communicator() const { return comm_; }
  // The wrapper of the module fit is training (null before setup): its buckets and timeline.
  dist::DistributedDataParallel* ddp() const { return ddp_.get(); }
  // The sharding wrapper of fit's optimizer (null before setup, and without zero_stage 1).
  dist::ZeroRedundancyOptimizer* zero() const { return zero_.get(); }

 private:
  dist::DDPOptions options_;
  int zero_stage_;
  dist::Communicator& comm_;
  std::unique_ptr<dist::DistributedDataParallel> ddp_;
  std::unique_ptr<dist::ZeroRedundancyOptimizer> zero_;
};

}  // namespace ath::train
