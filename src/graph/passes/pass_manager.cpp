#include <fmt/format.h>

#include <algorithm>

#include "athanor/core/error.h"
#include "athanor/graph/passes.h"
#include "athanor/graph/verify.h"

namespace ath::graph {

namespace {

struct NamedPass {
  std::string name;
  int (*run)(Graph&);
  bool inference_only = false;
};

constexpr std::string_view kRemat = "remat";
constexpr std::string_view kGeluPair = "gelu_pair";
constexpr std::string_view kSink = "sink";
constexpr std::string_view kInterop = "interop";

const std::vector<NamedPass>& passes() {
  // Folding first makes more nodes equal for CSE (and constants of 1 visible to simplify);
  // DCE last sweeps what the others left unused.
  static const std::vector<NamedPass> list{
      {"fold", fold_constants},
      {"simplify", simplify},
      {"cse", eliminate_common_subexpressions},
      {"linear", fuse_matmul_linear, true},
      {"gelu", fuse_gelu, true},
      {"attention", fuse_attention_softmax, true},
      {"heads", convert_attention_heads, true},
      {"self_attention", fuse_self_attention, true},
      {"select_view", convert_selects_to_views, true},
      {"log_softmax_nll", fuse_log_softmax_nll},
      {"bn_fold", fold_batch_norms, true},
      {"epilogue", fuse_epilogues},
      {"conv_pool", fuse_conv_pools, true},
      {"blocked_layout", convert_to_blocked_layout, true},
      {"pack_linear", pack_linears, true},
      {"pool_mask", fuse_pool_masks},
      {"conv_pool_train", fuse_conv_pools_for_training},
      {"norm_add", fuse_norm_adds},
      {"fuse", fuse_pointwise},
      {"dce", eliminate_dead_code},
  };
  return list;
}

}  // namespace

const std::vector<std::string>& pass_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (const NamedPass& p : passes()) n.push_back(p.name);
    n.emplace_back(kRemat);
    n.emplace_back(kGeluPair);
    n.emplace_back(kSink);
    n.emplace_back(kInterop);
    return n;
  }();
  return names;
}

PassReport run_passes(Graph& g, const PassOptions& options) {
  for (const std::string& d : options.disabled) {
    ATH_CHECK(std::find(pass_names().begin(), pass_names().end(), d) != pass_names().end(),
              ValueError, "graph passes: no pass named '{}' (passes: {})", d,
              fmt::join(pass_names(), ", "));
  }
  auto enabled = [&](std::string_view name) {
    return std::find(options.disabled.begin(), options.disabled.end(), name) ==
           options.disabled.end();
  };
  PassReport report;
  report.nodes_before = static_cast<int>(g.nodes.size());
  auto finish = [&](std::string_view name, int changed) {
    if (options.verify) {
      try {
        verify(g);
      } catch (Error& e) {
        throw ValueError(fmt::format("after pass '{}': {}", name, e.what()));
      }
    }
    report.passes.push_back({std::string(name), changed, static_cast<int>(g.nodes.size())});
    if (options.after_each) options.after_each(name, g);
  };
  for (const NamedPass& p : passes()) {
    if (enabled(p.name) && (options.inference || !p.inference_only)) finish(p.name, p.run(g));
  }
  // Last: it plans memory, so it sees the graph the executor will run. What costs no memory
  // elsewhere first (training graphs: an inference graph keeps nothing for a backward); then,
  // under a budget, whatever brings the arena down to it.
  if (enabled(kRemat) && (!options.inference || options.memory_budget > 0)) {
    if (!options.inference) report.remat = rematerialize_free(g);
    if (options.memory_budget > 0) {
      RematReport budgeted = rematerialize(g, options.memory_budget);
      if (report.remat.recomputed.empty()) report.remat.arena_before = budgeted.arena_before;
      for (Recomputation& r : budgeted.recomputed) report.remat.recomputed.push_back(std::move(r));
      report.remat.arena_after = budgeted.arena_after;
    }
    finish(kRemat, static_cast<int>(report.remat.recomputed.size()));
  }
  // After remat, whose GELU copies run next to the GELUs' gradients: one kernel makes both.
  if (enabled(kGeluPair) && !options.inference) finish(kGeluPair, fuse_gelu_pairs(g));
  // After remat, whose copies run where the late reads are: what is made early and read late
  // can often move down to its reader.
  if (enabled(kSink) && !options.inference) finish(kSink, sink_producers(g));
  // After everything that changes nodes: it reorders them and names pairs by position. It may
  // not undo what the planner saved: no pair may take a training graph's arena (or one under a
  // budget) past what it needs without pairs, or the budget if that is more.
  if (enabled(kInterop)) {
    InteropOptions interop = options.interop;
    if (!options.inference || options.memory_budget > 0)
      interop.max_arena = std::max(options.memory_budget, plan_memory(g).arena_bytes);
    report.interop = schedule_interop(g, interop);
    finish(kInterop, static_cast<int>(report.interop.pairs.size()));
  }
  return report;
}

}  // namespace ath::graph
