// DistributedDataParallel's state, shared by its construction (ddp.cpp) and its gradient
// reduction (ddp_reducer.cpp). One synchronised step: the first post-accumulate hook of a
// synchronised backward begins it (and queues a callback marking the backward's end); each hook
// marks its parameter ready, and a bucket whose parameters are all ready is launched once every
// bucket before it has been (so all ranks submit the buckets in the same order whatever order
// their gradients arrive in); finish() completes the step. The first synchronised step also
// records the order the gradients arrived in; once it is finished the buckets are rebuilt in
// rank 0's observed order (rebuild_buckets()).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "athanor/dist/ddp.h"

namespace ath::dist::detail {

struct DDPParam {
  std::string name;
  Tensor param;
  int64_t bucket = 0;
  int64_t offset = 0;  // in the bucket's flat buffer, in elements
  int64_t hook = -1;
  bool ready = false;  // got its gradient in the current synchronised backward
};

struct DDPBucket {
  std::vector<int64_t> members;  // indices into DDPState::params, launch order
  Tensor flat;                   // one buffer for the all-reduce (undefined in a world of one)
  int64_t pending = 0;           // members not ready yet in this step
  Work work;
  DDPBucketTiming timing;
};

struct DDPState {
  using Clock = std::chrono::steady_clock;

  DDPState(nn::Module& m, DDPOptions o, Communicator& c);

  // (Re)places every parameter in the buckets of `assignment` (ddp.cpp).
  void assign(const std::vector<std::vector<int64_t>>& assignment);
  // After the first synchronised step: rank 0's observed ready order, then the buckets by it.
  void rebuild_buckets();

  // Hooks and the step (ddp_reducer.cpp).
  // `from_engine`: the autograd engine runs this backward (its end is queued as a callback);
  // false for a compiled replay's gradients (graph::Executor::set_gradient_ready).
  void on_gradient(int64_t index, bool from_engine = true);
  // A synchronised backward whose gradients reached grad() without hooks (a compiled replay):
  // every parameter is ready at once and every bucket is launched now, in order.
  void all_gradients_ready();
  void begin_step(bool from_engine = true);
  void launch_ready();
  void launch(int64_t bucket);
  void finish();
  void wait_launched() noexcept;
  void reset_step();
  std::string describe_unready() const;

  nn::Module& module;
  DDPOptions options;
  Communicator& comm;
  bool single = false;  // a world of one process: no copies, no communication
  std::vector<DDPParam> params;
  // A parameter's index in params, by its tensor (gradient_ready() looks each one up per step).
  std::unordered_map<const TensorImpl*, int64_t> index_of;
  std::vector<BucketParam> sizes;  // of params, for the bucket assignment
  std::vector<DDPBucket> buckets;
  std::vector<DDPBucketInfo> info;
  DDPTimeline timeline;
  bool require_sync = true;

  // The synchronised step in progress.
  bool step_active = false;
  bool backward_ended = false;
  Clock::time_point backward_end{};
  int64_t next_launch = 0;
  int64_t steps_done = 0;
  // Until the buckets are rebuilt: the parameters in the order their gradients arrived.
  bool buckets_rebuilt = false;
  std::vector<int64_t> ready_order;
};

}  // namespace ath::dist::detail
