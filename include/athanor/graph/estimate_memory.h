// estimate_memory: the bytes a compiled step would hold at its peak — parameters, gradients,
// optimizer state, inputs, outputs and the memory plan's arena — from one traced run of the step
// at an example size. The BatchSizeFinder uses it to extrapolate to larger batches instead of
// trying them (train/callbacks/batch_size_finder.h).
//
//   #include "athanor/graph/estimate_memory.h"
//   #include "athanor/nn/linear.h"
//   #include "athanor/optim/sgd.h"
//   nn::Linear fc({.in = 64, .out = 10});
//   optim::SGD opt(fc.parameters(), {.lr = 0.1});
//   auto step = [&](const Tensor& x, const Tensor& y) {
//     opt.zero_grad();
//     Tensor loss = cross_entropy(fc.forward(x), y);
//     loss.backward();
//     opt.step();
//     return loss;
//   };
//   graph::MemoryPlan small = estimate_memory(step, randn({8, 64}), randint(0, 10, {8}));
//   graph::MemoryPlan large = estimate_memory(step, randn({32, 64}), randint(0, 10, {32}));
//   assert(large.total_bytes() > small.total_bytes());
//
// What it costs and what it means:
// - The step runs once, eagerly, while the tracer records it: whatever it changes (an optimizer
//   update) is changed. Estimate on a small example batch, and restore what matters afterwards
//   (the BatchSizeFinder snapshots the module and the optimizer).
// - The plan is made after the compiler's passes (fusion shrinks it), as compile() would.
// - A host read inside the step (loss.item(), a logged number) would keep compile() from
//   replaying the graph, but not from planning it: the plan describes the operations this run
//   made, which is what the memory question is about.
// - State the step creates (an optimizer's moments on its first step) is counted as the
//   buffers that made it; run the step once before estimating to count it as state.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "athanor/graph/compile.h"
#include "athanor/graph/memory_plan.h"

namespace ath {

namespace graph {
// The type-erased core: runs `run` under a tracer with `arguments` as the graph's arguments,
// runs the passes (verified) and plans the graph's memory.
MemoryPlan estimate_memory_of(const std::function<std::vector<Tensor>()>& run,
                              std::span<const Tensor> arguments);
}  // namespace graph

template <class F, class... Args>
graph::MemoryPlan estimate_memory(F&& step, const Args&... args) {
  std::vector<Tensor> tensors;
  uint64_t key = 0;
  std::string unbindable;
  (graph::collect_argument(args, tensors, key, unbindable), ...);
  ATH_CHECK(unbindable.empty(), ValueError, "estimate_memory: {}", unbindable);
  return graph::estimate_memory_of(
      [&]() -> std::vector<Tensor> {
        using R = std::invoke_result_t<F&, const Args&...>;
        if constexpr (std::is_void_v<R>) {
          step(args...);
          return {};
        } else {
          return graph::flatten_result(step(args...));
        }
      },
      tensors);
}

}  // namespace ath
