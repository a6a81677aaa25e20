// ZeroRedundancyOptimizer: ZeRO stage 1 (sharded optimizer state), as PyTorch's
// torch.distributed.optim.ZeroRedundancyOptimizer. It wraps an ordinary optimizer (SGD, Adam,
// AdamW, ... built over all the model's parameters): each rank owns a contiguous run of the
// parameters, about 1/N of their elements, keeps optimizer state for those only, and updates
// only those; then every owner broadcasts its updated parameters to the other ranks. With the
// gradients DDP averaged, the result is plain DDP's, bit for bit (each parameter's update is
// the same arithmetic on the same numbers, done on one rank and copied).
//
//   #include "athanor/dist/ddp.h"
//   #include "athanor/dist/zero_redundancy_optimizer.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/optim/adam.h"
//   nn::Linear model({.in = 4, .out = 2});
//   dist::DistributedDataParallel ddp(model);
//   optim::Adam adam(model.parameters(), {.lr = 1e-3});
//   dist::ZeroRedundancyOptimizer zero(adam);             // over dist::world()
//   zero.zero_grad();
//   mse_loss(ddp(randn({8, 4})), randn({8, 2})).backward();
//   ddp.finish_gradient_sync();
//   zero.step();                                          // this rank's share, then broadcasts
//   optim::OptimizerState full = zero.consolidated_state_dict();   // collective
//   zero.load_state_dict(full);                           // each rank keeps its own share
//
// How the sharding works: before the wrapped optimizer's step, the gradients of parameters this
// rank does not own are set aside (grad() none), so the optimizer skips them and never creates
// their state; they are put back after. The optimizer object stays the one the user built, so
// LR schedulers, param_group(g).set_lr and gradient clipping (before step, on the full averaged
// gradients) work as usual. The partition is fixed at construction: parameter k (numbered
// across groups in order, as in state dicts) belongs to rank floor(N x (elements before k plus
// half of k's) / all elements), i.e. contiguous runs balanced by element count.
//
// State dicts: consolidated_state_dict() is a collective that returns on every rank the full
// state dict, identical to what the unsharded optimizer would hold (each owner broadcasts its
// parameters' entries), so a checkpoint written by rank 0 loads into a plain or a sharded run,
// with any number of ranks. load_state_dict(full) keeps only this rank's entries. Resuming
// continues exactly.
//
// In the Trainer: strategy = "ddp_zero1" (train::DDPStrategy with zero_stage = 1) wraps the
// configured optimizer in one of these; checkpoints hold the consolidated state.
#pragma once

#include <cstdint>
#include <vector>

#include "athanor/dist/communicator.h"
#include "athanor/optim/optimizer.h"

namespace ath::dist {

class ZeroRedundancyOptimizer {
 public:
  // `optimizer` must outlive this wrapper; every rank must build it over the same parameters
  // (same groups, shapes and order). `comm` null means dist::world().
  explicit ZeroRedundancyOptimizer(optim::Optimizer& optimizer, Communicator* comm = nullptr);
  ZeroRedundancyOptimizer(const ZeroRedundancyOptimizer&) = delete;
  ZeroRedundancyOptimizer& operator=(const ZeroRedundancyOptimizer&) = delete;

  // prepare_step(), the wrapped optimizer's step(), finish_step().
  void step();
  void zero_grad(bool set_to_none = true) { optimizer_.zero_grad(set_to_none); }
  // The two halves of step(), for callers that run the optimizer's step themselves (a loss
  // scaler's step, which may skip it): prepare_step sets aside the gradients of parameters
  // other ranks own; finish_step puts them back and broadcasts every owner's parameters (every
  // rank must call it, whether or not the step ran).
  void prepare_step();
  void finish_step();

  optim::Optimizer& optimizer() { return optimizer_; }
  Communicator& communicator() { return comm_; }
  // The rank owning parameter k (numbered across groups in order).
  int owner(std::size_t k) const { return owner_[k]; }
  // Elements of the parameters each rank owns.
  std::vector<int64_t> partition_numel() const;
  // Bytes of optimizer state (tensors and counters) held on this rank.
  int64_t local_state_bytes() const;

  // Collective: the full state dict, on every rank (see above).
  optim::OptimizerState consolidated_state_dict();
  // Loads a full state dict (consolidated, or a plain optimizer's), keeping this rank's share.
  void load_state_dict(const optim::OptimizerState& full);

 private:
  struct ParamRef {
    std::size_t group;
    std::size_t index;
    Tensor param;
  };
  optim::Optimizer& optimizer_;
  Communicator& comm_;
  std::vector<ParamRef> params_;  // numbered across groups in order
  std::vector<int> owner_;
  std::vector<Tensor> set_aside_;  // the gradients prepare_step took away
  bool prepared_ = false;
};

}  // namespace ath::dist
