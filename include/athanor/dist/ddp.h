// DistributedDataParallel: data-parallel training of one Module replica per rank. At
// construction it broadcasts rank 0's parameters and buffers to every rank, groups the
// gradients into buckets (ddp_buckets.h: 25 MiB, the first 1 MiB, reverse registration order;
// rebuilt after the first synchronised step in the order the gradients actually arrived) and
// registers a post-accumulate-grad hook on each parameter. During backward, as soon as every
// gradient of a bucket has been accumulated, the bucket is copied into its flat buffer and
// all-reduced (mean) asynchronously as "ddp bucket N", so communication overlaps the rest of
// the backward pass. finish_gradient_sync(), between backward and the optimizer step, waits for
// the buckets and writes the averaged values back into each parameter's grad().
//
//   #include "athanor/dist/ddp.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/optim/sgd.h"
//   nn::Linear net({.in = 8, .out = 2});
//   dist::DistributedDataParallel ddp(net);        // on dist::world(); rank 0's weights
//   optim::SGD opt(net.parameters(), {.lr = 0.1});
//   for (int step = 0; step < 3; ++step) {
//     opt.zero_grad();
//     Tensor loss = ddp(randn({4, 8})).pow(2).mean();   // this rank's share of the batch
//     loss.backward();                             // buckets all-reduce as grads are ready
//     ddp.finish_gradient_sync();                  // grads: the mean over ranks
//     opt.step();
//   }
//   {
//     auto guard = ddp.no_sync();                  // accumulate locally, no communication
//     ddp(randn({4, 8})).sum().backward();
//   }
//   assert(ddp.timeline().summary().steps == 3);
//
// Rules, as PyTorch's DDP:
// - Every rank runs the same model and the same number of synchronised backward passes; each
//   synchronised backward is followed by finish_gradient_sync() before the next one begins.
//   Under no_sync() gradients only accumulate locally; the next synchronised backward reduces
//   all of it.
// - A parameter that gets no gradient in a synchronised backward blocks its bucket. Without
//   find_unused_parameters finish_gradient_sync() then throws an ath::Error naming those
//   parameters; with it, they count as zero gradients in the mean, a parameter that got a
//   gradient on some rank gets the mean on every rank, and one unused on all ranks keeps its
//   grad() as it was (undefined after zero_grad()). That option costs one small all-reduce a
//   step.
// - Buffers (BatchNorm's running statistics) follow rank 0's: with broadcast_buffers they are
//   broadcast before every forward run through operator(), or when sync_buffers() is called.
// - In a world of one process the hooks only check that every gradient arrived: nothing is
//   copied or communicated.
// - Parameters must keep their storage, dtype and shape while wrapped (convert the module with
//   to(dtype) before wrapping it); the Module must outlive the wrapper.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "athanor/dist/communicator.h"
#include "athanor/dist/ddp_buckets.h"
#include "athanor/dist/ddp_timeline.h"
#include "athanor/nn/module.h"

namespace ath::dist {

struct DDPOptions {
  // Bytes a bucket holds before it closes (PyTorch's bucket_cap_mb, here in bytes), and the
  // smaller cap of the first bucket, so that the first all-reduce starts early.
  int64_t bucket_cap_bytes = kDefaultBucketCapBytes;
  int64_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes;
  // After the first synchronised step, refill the buckets in the order the gradients arrived
  // in (rank 0's), instead of reverse registration order (ddp_buckets.h). Gradients are the
  // same either way; only when each bucket can start changes.
  bool rebuild_buckets = true;
  // Parameters without a gradient in a step count as zeros instead of being an error.
  bool find_unused_parameters = false;
  // Broadcast rank 0's buffers before every forward through operator().
  bool broadcast_buffers = true;
  // Steps the timeline keeps (the latest ones); 0 records none.
  int64_t timeline_steps = 1000;
  // The communicator to use; null means dist::world().
  Communicator* communicator = nullptr;
};

// One bucket as assigned: its parameters' dotted names (launch order) and size.
struct DDPBucketInfo {
  std::vector<std::string> names;
  int64_t numel = 0;
  int64_t bytes = 0;
  DType dtype = kFloat32;
};

namespace detail {
struct DDPState;
}

class DistributedDataParallel {
 public:
  explicit DistributedDataParallel(nn::Module& module, DDPOptions options = {});
  ~DistributedDataParallel();
  DistributedDataParallel(const DistributedDataParallel&) = delete;
  DistributedDataParallel& operator=(const DistributedDataParallel&) = delete;

  // The module's forward (after sync_buffers() when broadcast_buffers).
  Tensor operator()(const Tensor& input);
  Tensor forward(const Tensor& input) { return (*this)(input); }
  nn::Module& module() const;
  Communicator& communicator() const;
  const DDPOptions& options() const;

  // Rank 0's buffers, on every rank (a no-op in a world of one process).
  void sync_buffers();
  // Waits for the buckets of the last synchronised backward, launches those not yet ready
  // (find_unused_parameters) or throws naming the parameters that got no gradient, and writes
  // the mean back into each parameter's grad(). Without a backward since the last call it does
  // nothing.
  void finish_gradient_sync();
  // For a backward whose gradients reached grad() without autograd hooks (a compiled replay of
  // the step, graph/compile.h): marks every parameter ready and launches every bucket now, in
  // order, as the hooks would have; finish_gradient_sync() then completes the step as usual. No
  // overlap with the backward (it has already run). Does nothing under no_sync() or when hooks
  // already began this step.
  void gradients_ready();
  // One parameter's gradient of a compiled replay is final (CompileOptions::on_gradient_ready):
  // what its post-accumulate hook does in an eager backward — its bucket's all-reduce starts
  // once the bucket is complete, overlapping the rest of the replay. Parameters the wrapper
  // does not hold are ignored.
  void gradient_ready(const Tensor& parameter);

  // While a NoSync guard lives, backward passes accumulate gradients locally only.
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp);
    ~NoSync();
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    DistributedDataParallel& ddp_;
    bool previous_;
  };
  [[nodiscard]] NoSync no_sync() { return NoSync(*this); }
  // What no_sync() toggles: whether the next backward passes reduce gradients.
  void set_require_gradient_sync(bool on);
  bool require_gradient_sync() const;

  // The current buckets, in launch order. With rebuild_buckets they change once, when the first
  // synchronised step is finished (a reference taken before then sees the new ones).
  const std::vector<DDPBucketInfo>& buckets() const;
  const DDPTimeline& timeline() const;
  DDPTimeline& timeline();

 private:
  std::unique_ptr<detail::DDPState> state_;
};

}  // namespace ath::dist
