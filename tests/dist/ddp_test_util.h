// Helpers of the DistributedDataParallel tests: a small MLP (Linear-ReLU-Linear, with optional
// extra layers for the unused-parameter cases) and synthetic regression data that every rank
// generates identically, so each rank can compute the one-process reference on the whole batch
// locally and compare.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>

#include "athanor/athanor.h"
#include "athanor/dist/ddp.h"
#include "athanor/dist/dist.h"
#include "athanor/nn/linear.h"
#include "athanor/optim/sgd.h"

namespace ath::dist::testing {

struct Mlp : nn::Module {
  // `extra`: a layer used when use_extra is set; `never`: a layer no forward uses.
  explicit Mlp(uint64_t seed, bool with_extra = false, bool with_never = false) : Module("Mlp") {
    manual_seed(seed);
    fc1 =
        register_module("fc1", std::make_shared<nn::Linear>(nn::LinearOptions{.in = 8, .out = 16}));
    fc2 =
        register_module("fc2", std::make_shared<nn::Linear>(nn::LinearOptions{.in = 16, .out = 4}));
    if (with_extra) {
      extra = register_module("extra",
                              std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 4}));
    }
    if (with_never) {
      never = register_module("never",
                              std::make_shared<nn::Linear>(nn::LinearOptions{.in = 4, .out = 4}));
    }
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = (*fc2)((*fc1)(x).relu());
    return use_extra && extra ? y + (*extra)(y) : y;
  }
  std::shared_ptr<nn::Linear> fc1, fc2, extra, never;
  bool use_extra = true;
};

// Inputs [rows, 8] and targets [rows, 4] of a step: the same on every rank.
inline std::pair<Tensor, Tensor> step_data(int64_t step, int64_t rows) {
  manual_seed(1000 + static_cast<uint64_t>(step));
  Tensor x = randn({rows, 8});
  Tensor y = randn({rows, 4});
  return {x, y};
}

inline Tensor rows_of(const Tensor& t, int64_t start, int64_t count) {
  return t.narrow(0, start, count).contiguous();
}

// Copies `from`'s parameters and buffers into `to` (same architecture).
inline void copy_state(const nn::Module& from, nn::Module& to) {
  to.load_state_dict(from.state_dict());
}

inline double max_abs_param_diff(const nn::Module& a, const nn::Module& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  EXPECT_EQ(pa.size(), pb.size());
  double worst = 0;
  for (std::size_t i = 0; i < std::min(pa.size(), pb.size()); ++i) {
    worst = std::max(worst, ath::max((pa[i].second - pb[i].second).abs()).item<double>());
  }
  return worst;
}

// One step of each side of an equivalence test on the batch step_data(step, rows_per_rank x
// world size): `ddp` (with `opt` over its module) on this rank's rows, `reference` (with
// `ref_opt`) on all of them, both by mean squared error.
inline void step_alongside(DistributedDataParallel& ddp, optim::Optimizer& opt,
                           nn::Module& reference, optim::Optimizer& ref_opt, int64_t step,
                           int64_t rows_per_rank) {
  Communicator& comm = ddp.communicator();
  const auto [x, y] = step_data(step, rows_per_rank * comm.world_size());
  const int64_t first = rows_per_rank * comm.rank();
  opt.zero_grad();
  mse_loss(ddp(rows_of(x, first, rows_per_rank)), rows_of(y, first, rows_per_rank)).backward();
  ddp.finish_gradient_sync();
  opt.step();
  ref_opt.zero_grad();
  mse_loss(reference(x), y).backward();
  ref_opt.step();
}

// Every rank's copy of `t` (flattened, float64) is identical: all-gathers and compares.
inline void expect_same_on_all_ranks(Communicator& comm, const Tensor& t, const std::string& what) {
  Tensor mine = t.detach().to(kFloat64).contiguous().reshape({-1});
  Tensor all = empty({comm.world_size() * mine.numel()}, kFloat64);
  comm.allgather(all, mine, "compare " + what).wait();
  for (int r = 0; r < comm.world_size(); ++r) {
    Tensor theirs = all.narrow(0, r * mine.numel(), mine.numel());
    EXPECT_EQ(ath::max((theirs - mine).abs()).item<double>(), 0.0)
        << what << " differs between rank " << comm.rank() << " and rank " << r;
  }
}

}  // namespace ath::dist::testing
