#include "athanor/graph/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace ath::graph {

std::string profile_report(const Graph& graph, const NodeProfile& profile, int top) {
  if (profile.runs == 0) return "profile: no profiled runs\n";
  const double runs = static_cast<double>(profile.runs);
  const double per_run = profile.run_seconds / runs;
  struct OpTotal {
    double seconds = 0;
    int nodes = 0;
  };
  std::map<std::string, OpTotal> by_op;
  double in_nodes = 0;
  for (std::size_t k = 0; k < profile.seconds.size(); ++k) {
    const std::string name = graph.nodes[k].op->name + (profile.paired[k] ? " (pair)" : "");
    by_op[name].seconds += profile.seconds[k];
    ++by_op[name].nodes;
    in_nodes += profile.seconds[k];
  }
  std::vector<std::pair<std::string, OpTotal>> ops(by_op.begin(), by_op.end());
  std::sort(ops.begin(), ops.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  auto share = [&](double s) { return per_run > 0 ? 100.0 * s / runs / per_run : 0.0; };
  std::string out = fmt::format(
      "profile: {} runs, {:.1f} us per run ({:.1f} us in {} nodes, {:.1f} us between them)\n",
      profile.runs, per_run * 1e6, in_nodes / runs * 1e6, profile.seconds.size(),
      (per_run - in_nodes / runs) * 1e6);
  out += fmt::format("  {:<28} {:>10} {:>7} {:>6}\n", "op", "us/run", "share", "nodes");
  for (const auto& [name, t] : ops)
    out += fmt::format("  {:<28} {:>10.1f} {:>6.1f}% {:>6}\n", name, t.seconds / runs * 1e6,
                       share(t.seconds), t.nodes);
  std::vector<std::size_t> order(profile.seconds.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return profile.seconds[a] > profile.seconds[b]; });
  const std::size_t shown = std::min(order.size(), static_cast<std::size_t>(std::max(top, 0)));
  if (shown > 0) out += fmt::format("  the {} costliest nodes:\n", shown);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::size_t k = order[i];
    out += fmt::format("  {:>10.1f} us {:>5.1f}%  [{}] {}\n", profile.seconds[k] / runs * 1e6,
                       share(profile.seconds[k]), k, graph.node_text(static_cast<int32_t>(k)));
  }
  return out;
}

}  // namespace ath::graph
