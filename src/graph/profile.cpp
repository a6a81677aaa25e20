#include "athanor/graph/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

namespace ath::graph {

std::vector<OpTime> profile_by_op(const Graph& graph, const NodeProfile& profile) {
  const double runs = static_cast<double>(std::max<int64_t>(profile.runs, 1));
  std::map<std::string, OpTime> by_op;
  for (std::size_t k = 0; k < profile.seconds.size(); ++k) {
    const std::string name = graph.nodes[k].op->name + (profile.paired[k] ? " (pair)" : "");
    OpTime& t = by_op[name];
    t.op = name;
    t.seconds_per_run += profile.seconds[k] / runs;
    ++t.nodes;
  }
  std::vector<OpTime> ops;
  for (auto& [name, t] : by_op) ops.push_back(std::move(t));
  std::stable_sort(ops.begin(), ops.end(), [](const OpTime& a, const OpTime& b) {
    return a.seconds_per_run > b.seconds_per_run;
  });
  return ops;
}

std::string profile_report(const Graph& graph, const NodeProfile& profile, int top) {
  if (profile.runs == 0) return "profile: no profiled runs\n";
  const double runs = static_cast<double>(profile.runs);
  const double per_run = profile.run_seconds / runs;
  double in_nodes = 0;
  for (const double s : profile.seconds) in_nodes += s;
  auto share = [&](double s) { return per_run > 0 ? 100.0 * s / per_run : 0.0; };
  std::string out = fmt::format(
      "profile: {} runs, {:.1f} us per run ({:.1f} us in {} nodes, {:.1f} us between them)\n",
      profile.runs, per_run * 1e6, in_nodes / runs * 1e6, profile.seconds.size(),
      (per_run - in_nodes / runs) * 1e6);
  out += fmt::format("  {:<28} {:>10} {:>7} {:>6}\n", "op", "us/run", "share", "nodes");
  for (const OpTime& t : profile_by_op(graph, profile))
    out += fmt::format("  {:<28} {:>10.1f} {:>6.1f}% {:>6}\n", t.op, t.seconds_per_run * 1e6,
                       share(t.seconds_per_run), t.nodes);
  std::vector<std::size_t> order(profile.seconds.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return profile.seconds[a] > profile.seconds[b]; });
  const std::size_t shown = std::min(order.size(), static_cast<std::size_t>(std::max(top, 0)));
  if (shown > 0) out += fmt::format("  the {} costliest nodes:\n", shown);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::size_t k = order[i];
    out +=
        fmt::format("  {:>10.1f} us {:>5.1f}%  [{}] {}\n", profile.seconds[k] / runs * 1e6,
                    share(profile.seconds[k] / runs), k, graph.node_text(static_cast<int32_t>(k)));
  }
  return out;
}

}  // namespace ath::graph
