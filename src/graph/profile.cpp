#include "athanor/graph/profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "athanor/graph/interop.h"

namespace ath::graph {

namespace {

// The name a node's time is listed under: its op's, "(pair)" when it ran first of a pair.
std::string op_key(const Graph& graph, const NodeProfile& profile, std::size_t k) {
  return graph.nodes[k].op->name + (profile.paired[k] ? " (pair)" : "");
}

// A node's work, with its partner's when it ran first of a pair (its time holds both).
NodeWork timed_work(const Graph& graph, const NodeProfile& profile, std::size_t k) {
  NodeWork w = node_work(graph, graph.nodes[k]);
  if (profile.paired[k] && k + 1 < graph.nodes.size()) {
    const NodeWork partner = node_work(graph, graph.nodes[k + 1]);
    w.flops += partner.flops;
    w.bytes += partner.bytes;
  }
  return w;
}

// The least time the work can take: the longer of its products at the GEMM rate and its bytes
// at the bandwidth (a roofline: the two overlap at best).
double floor_seconds(const NodeWork& w, const MachineLimits& limits) {
  return std::max(w.flops / limits.gemm_flops, w.bytes / limits.bytes_per_s);
}

// " GFLOP/s  of GEMM  GB/s  of floor" columns for work done in `seconds`.
std::string rate_columns(const NodeWork& w, double seconds, const MachineLimits& limits) {
  if (seconds <= 0) return "";
  const std::string flops = w.flops > 0 ? fmt::format("{:>9.1f} {:>6.1f}%", w.flops / seconds / 1e9,
                                                      100.0 * w.flops / seconds / limits.gemm_flops)
                                        : fmt::format("{:>9} {:>7}", "-", "-");
  return fmt::format(" {} {:>8.1f} {:>6.1f}%", flops, w.bytes / seconds / 1e9,
                     100.0 * floor_seconds(w, limits) / seconds);
}

}  // namespace

std::vector<OpTime> profile_by_op(const Graph& graph, const NodeProfile& profile) {
  const double runs = static_cast<double>(std::max<int64_t>(profile.runs, 1));
  std::map<std::string, OpTime> by_op;
  for (std::size_t k = 0; k < profile.seconds.size(); ++k) {
    const std::string name = op_key(graph, profile, k);
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

std::string profile_report(const Graph& graph, const NodeProfile& profile, int top,
                           const MachineLimits& limits) {
  if (profile.runs == 0) return "profile: no profiled runs\n";
  const double runs = static_cast<double>(profile.runs);
  const double per_run = profile.run_seconds / runs;
  double in_nodes = 0;
  for (const double s : profile.seconds) in_nodes += s;
  auto share = [&](double s) { return per_run > 0 ? 100.0 * s / per_run : 0.0; };
  const bool rates = limits.known();
  // Work per op (profile_by_op's keys), for the rate columns.
  std::map<std::string, NodeWork> op_work;
  std::vector<NodeWork> work(profile.seconds.size());
  for (std::size_t k = 0; rates && k < profile.seconds.size(); ++k) {
    // The second node of a pair has no time of its own: its work is counted with the first's.
    if (k > 0 && profile.paired[k - 1]) continue;
    work[k] = timed_work(graph, profile, k);
    NodeWork& w = op_work[op_key(graph, profile, k)];
    w.flops += work[k].flops;
    w.bytes += work[k].bytes;
  }
  std::string out = fmt::format(
      "profile: {} runs, {:.1f} us per run ({:.1f} us in {} nodes, {:.1f} us between them)\n",
      profile.runs, per_run * 1e6, in_nodes / runs * 1e6, profile.seconds.size(),
      (per_run - in_nodes / runs) * 1e6);
  if (rates) {
    out += fmt::format(
        "  limits: GEMM {:.1f} GFLOP/s, bandwidth {:.1f} GB/s; \"of floor\": the least time the "
        "work can take (its FLOPs at the GEMM rate or its bytes at the bandwidth, the longer) "
        "over the time it took\n",
        limits.gemm_flops / 1e9, limits.bytes_per_s / 1e9);
  }
  out += fmt::format("  {:<28} {:>10} {:>7} {:>6}", "op", "us/run", "share", "nodes");
  out += rates ? fmt::format(" {:>9} {:>7} {:>8} {:>7}\n", "GFLOP/s", "of GEMM", "GB/s", "of floor")
               : "\n";
  for (const OpTime& t : profile_by_op(graph, profile)) {
    out += fmt::format("  {:<28} {:>10.1f} {:>6.1f}% {:>6}", t.op, t.seconds_per_run * 1e6,
                       share(t.seconds_per_run), t.nodes);
    out += (rates ? rate_columns(op_work[t.op], t.seconds_per_run, limits) : "") + "\n";
  }
  if (rates) {
    // The run against its floor, and the products apart from the rest.
    NodeWork products, rest;
    double products_s = 0, rest_s = 0, floor_s = 0;
    for (std::size_t k = 0; k < work.size(); ++k) {
      const bool product = work[k].flops > 0;
      NodeWork& w = product ? products : rest;
      w.flops += work[k].flops;
      w.bytes += work[k].bytes;
      (product ? products_s : rest_s) += profile.seconds[k] / runs;
      floor_s += floor_seconds(work[k], limits);  // work is per run
    }
    out += fmt::format(
        "  products: {:.1f} us ({:.1f}%) at {:.1f} GFLOP/s, {:.1f}% of the GEMM rate; the other "
        "nodes: {:.1f} us ({:.1f}%) at {:.1f} GB/s, {:.1f}% of the bandwidth\n",
        products_s * 1e6, share(products_s),
        products_s > 0 ? products.flops / products_s / 1e9 : 0.0,
        products_s > 0 ? 100.0 * products.flops / products_s / limits.gemm_flops : 0.0,
        rest_s * 1e6, share(rest_s), rest_s > 0 ? rest.bytes / rest_s / 1e9 : 0.0,
        rest_s > 0 ? 100.0 * rest.bytes / rest_s / limits.bytes_per_s : 0.0);
    out += fmt::format(
        "  floor: {:.1f} us per run (every node at its limit, nothing between them); the run took "
        "{:.2f}x that\n",
        floor_s * 1e6, floor_s > 0 ? per_run / floor_s : 0.0);
  }
  std::vector<std::size_t> order(profile.seconds.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return profile.seconds[a] > profile.seconds[b]; });
  const std::size_t shown = std::min(order.size(), static_cast<std::size_t>(std::max(top, 0)));
  if (shown > 0) out += fmt::format("  the {} costliest nodes:\n", shown);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::size_t k = order[i];
    out += fmt::format("  {:>10.1f} us {:>5.1f}%", profile.seconds[k] / runs * 1e6,
                       share(profile.seconds[k] / runs));
    if (rates) out += rate_columns(work[k], profile.seconds[k] / runs, limits);
    out += fmt::format("  [{}] {}\n", k, graph.node_text(static_cast<int32_t>(k)));
  }
  return out;
}

}  // namespace ath::graph
