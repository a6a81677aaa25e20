#include "athanor/graph/estimate_memory.h"

#include "athanor/graph/passes.h"
#include "athanor/graph/tracer.h"

namespace ath::graph {

MemoryPlan estimate_memory_of(const std::function<std::vector<Tensor>()>& run,
                              std::span<const Tensor> arguments) {
  Graph g;
  {
    Tracer tracer(arguments);  // an exception from `run` ends the trace (the destructor)
    g = tracer.finish(run());
  }
  // The same passes and inter-op pairs as compile() (its rates: calibrated once per process).
  const PassReport report =
      run_passes(g, {.verify = true, .interop = {.costs = calibrated_interop_costs()}});
  MemoryPlan plan = plan_memory(g, report.interop.paired_first());
  check_plan(g, plan);
  return plan;
}

}  // namespace ath::graph
