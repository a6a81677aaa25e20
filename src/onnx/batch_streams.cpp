#include "batch_streams.h"

#include <omp.h>

#include <exception>

#include "athanor/core/parallel.h"
#include "athanor/ops/shaping.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::onnx::detail {

BatchStreams::BatchStreams(graph::Graph share_graph, graph::MemoryPlan share_plan, int count,
                           bool arena)
    : graph(std::move(share_graph)), plan(std::move(share_plan)) {
  for (int i = 0; i < count; ++i)
    executors.push_back(arena ? std::make_unique<graph::Executor>(graph, plan)
                              : std::make_unique<graph::Executor>(graph));
}

std::vector<Tensor> BatchStreams::run(std::span<const Tensor> arguments) const {
  const int n = count();
  std::vector<std::vector<Tensor>> parts(static_cast<std::size_t>(n));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
#pragma omp parallel num_threads(n)
  {
    // A thread short (the runtime gave fewer): the others take its shares in turn.
    const ThisThreadCount one(1);
    const NoGradGuard no_grad;
    for (int i = omp_get_thread_num(); i < n; i += omp_get_num_threads()) {
      try {
        std::vector<Tensor> share;
        for (const Tensor& a : arguments) {
          const int64_t rows = a.size(0) / n;
          share.push_back(a.narrow(0, i * rows, rows));
        }
        parts[static_cast<std::size_t>(i)] = executors[static_cast<std::size_t>(i)]->run(share);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    }
  }
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<Tensor> outputs;
  for (std::size_t o = 0; o < parts[0].size(); ++o) {
    std::vector<Tensor> shares;
    for (const auto& p : parts) shares.push_back(p[o]);
    outputs.push_back(cat(shares, 0));
  }
  return outputs;
}

}  // namespace ath::onnx::detail
