// DistributedDataParallel's gradient reduction: the post-accumulate hooks that launch bucket
// all-reduces during backward, and finish(), which completes a synchronised step.
//
// Memory contract: launch() reads each member's grad() and writes the bucket's flat buffer
// (which the communicator then owns until its Work completes); finish() writes the mean back
// into each grad() in place (a grad() that was undefined gets a new tensor, find_unused only).
// Parameters are never written. In a world of one process nothing is copied.
#include <fmt/format.h>

#include "athanor/autograd/engine.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/tensor/grad_mode.h"
#include "ddp_state.h"

namespace ath::dist::detail {

void DDPState::on_gradient(int64_t index, bool from_engine) {
  if (!require_sync) return;  // no_sync(): the gradient just accumulates
  DDPParam& p = params[static_cast<std::size_t>(index)];
  if (!step_active) {
    begin_step(from_engine);
  } else if (backward_ended) {
    reset_step();
    throw Error(fmt::format(
        "DistributedDataParallel: a synchronised backward pass began (parameter '{}' got a "
        "gradient) before finish_gradient_sync() completed the previous one. Call "
        "finish_gradient_sync() after each synchronised backward, before the optimizer step; "
        "to accumulate gradients over several backward passes, run all but the last under "
        "no_sync()",
        p.name));
  }
  ATH_CHECK(!p.ready, Error,
            "DistributedDataParallel: parameter '{}' got its gradient twice in one backward "
            "pass (its bucket {} is already being all-reduced)",
            p.name, p.bucket);
  p.ready = true;
  if (!buckets_rebuilt) ready_order.push_back(index);
  DDPBucket& b = buckets[static_cast<std::size_t>(p.bucket)];
  if (--b.pending == 0) {
    b.timing.ready = Clock::now();
    launch_ready();
  }
}

void DDPState::all_gradients_ready() {
  if (!require_sync || step_active) return;  // no_sync(), or the hooks already began the step
  step_active = true;
  backward_ended = true;
  backward_end = Clock::now();
  next_launch = 0;
  ready_order.clear();
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    DDPBucket& b = buckets[i];
    b.pending = 0;
    b.work = Work();
    b.timing = {.bucket = static_cast<int64_t>(i), .bytes = info[i].bytes, .ready = backward_end};
    // Until the rebuild: the order the buckets launch in stands for the arrival order.
    if (!buckets_rebuilt) ready_order.insert(ready_order.end(), b.members.begin(), b.members.end());
  }
  for (auto& p : params) p.ready = true;
  launch_ready();
}

void DDPState::begin_step(bool from_engine) {
  step_active = true;
  backward_ended = false;
  next_launch = 0;
  ready_order.clear();
  for (auto& p : params) p.ready = false;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    DDPBucket& b = buckets[i];
    b.pending = static_cast<int64_t>(b.members.size());
    b.work = Work();
    b.timing = {.bucket = static_cast<int64_t>(i), .bytes = info[i].bytes};
  }
  // Runs once this backward pass has accumulated every gradient: the end of the compute that
  // communication can hide behind. (A replay's end is finish()'s start.)
  if (!from_engine) return;
  queue_callback([this] {
    backward_ended = true;
    backward_end = Clock::now();
  });
}

// Launches, in bucket order, every bucket that is ready and not launched yet: a bucket never
// overtakes an earlier one, so every rank submits the same sequence of all-reduces.
void DDPState::launch_ready() {
  while (next_launch < static_cast<int64_t>(buckets.size()) &&
         buckets[static_cast<std::size_t>(next_launch)].pending == 0) {
    launch(next_launch++);
  }
}

void DDPState::launch(int64_t index) {
  // A hook that fires while a step is traced for compile(): the copies into the bucket and the
  // all-reduce are the hook's business, not the step's (the observer would record the copies;
  // a collective it saw would fail the trace).
  ath::detail::ObserverPause not_part_of_the_step;
  DDPBucket& b = buckets[static_cast<std::size_t>(index)];
  b.pending = 0;
  if (single) {  // the mean over one rank is the gradient itself
    b.timing.start = b.timing.end = Clock::now();
    return;
  }
  {
    NoGradGuard no_grad;
    for (int64_t i : b.members) {
      const DDPParam& p = params[static_cast<std::size_t>(i)];
      Tensor slot = b.flat.narrow(0, p.offset, p.param.numel());
      Tensor g = p.param.grad();
      if (g.defined()) {
        slot.view(p.param.shape()).copy_(g);
      } else {
        slot.zero_();  // unused here (find_unused_parameters): a zero contribution
      }
    }
  }
  b.timing.start = Clock::now();
  b.work = comm.allreduce(b.flat, ReduceOp::Mean, fmt::format("ddp bucket {}", index));
}

std::string DDPState::describe_unready() const {
  std::string out;
  for (std::size_t bi = 0; bi < buckets.size(); ++bi) {
    if (buckets[bi].pending == 0) continue;
    for (int64_t i : buckets[bi].members) {
      const DDPParam& p = params[static_cast<std::size_t>(i)];
      if (p.ready) continue;
      out += fmt::format("{}'{}' (bucket {})", out.empty() ? "" : ", ", p.name, bi);
    }
  }
  return out;
}

void DDPState::wait_launched() noexcept {
  for (auto& b : buckets) {
    try {
      if (b.work.defined()) b.work.wait();
    } catch (...) {  // the communicator is poisoned; the caller reports its own error
    }
  }
}

void DDPState::reset_step() {
  wait_launched();
  step_active = false;
  backward_ended = false;
  for (auto& p : params) p.ready = false;
  for (auto& b : buckets) b.work = Work();
}

void DDPState::finish() {
  if (!step_active) return;  // no synchronised backward since the last call
  const Clock::time_point now = Clock::now();
  if (!backward_ended) backward_end = now;
  if (next_launch < static_cast<int64_t>(buckets.size()) && !options.find_unused_parameters) {
    const std::string missing = describe_unready();
    reset_step();
    throw Error(fmt::format(
        "DistributedDataParallel: finish_gradient_sync: these parameters got no gradient in "
        "the backward pass on rank {}, so their buckets cannot be all-reduced: {}. If the "
        "model does not use every parameter in every step, construct DistributedDataParallel "
        "with find_unused_parameters = true (their gradients then count as zeros); otherwise "
        "make the loss depend on every parameter, or freeze the unused ones "
        "(requires_grad_(false)) before wrapping the module",
        comm.rank(), missing));
  }
  try {
    for (auto i = next_launch; i < static_cast<int64_t>(buckets.size()); ++i) {
      buckets[static_cast<std::size_t>(i)].timing.ready = now;
      launch(i);
    }
    next_launch = static_cast<int64_t>(buckets.size());
    // Which parameters got a gradient on any rank: those that did not anywhere keep grad() as
    // it was instead of getting zeros.
    Tensor used;
    Work used_work;
    if (!single && options.find_unused_parameters) {
      used = zeros({static_cast<int64_t>(params.size())}, kInt32);
      auto* flags = used.data<int32_t>();
      for (std::size_t i = 0; i < params.size(); ++i) {
        flags[i] = params[i].param.grad().defined() ? 1 : 0;
      }
      used_work = comm.allreduce(used, ReduceOp::Max, "ddp unused-parameter map");
    }
    for (auto& b : buckets) {
      if (!b.work.defined()) continue;
      b.work.wait();
      b.timing.end = b.work.completed_at().value_or(Clock::now());
    }
    if (!single) {
      if (used_work.defined()) used_work.wait();
      NoGradGuard no_grad;
      for (std::size_t i = 0; i < params.size(); ++i) {
        const DDPParam& p = params[i];
        const DDPBucket& b = buckets[static_cast<std::size_t>(p.bucket)];
        Tensor mean = b.flat.narrow(0, p.offset, p.param.numel()).view(p.param.shape());
        Tensor g = p.param.grad();
        if (g.defined()) {
          g.copy_(mean);
        } else if (used.defined() && used.data<int32_t>()[i] != 0) {
          p.param.set_grad(mean.clone());
        }
      }
    }
  } catch (...) {
    reset_step();
    throw;
  }
  DDPStepTiming step{.step = steps_done++, .backward_end = backward_end};
  for (const auto& b : buckets) step.buckets.push_back(b.timing);
  timeline.add_step(std::move(step));
  reset_step();
  if (!buckets_rebuilt) rebuild_buckets();
}

}  // namespace ath::dist::detail
