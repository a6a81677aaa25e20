// The inter-op schedule: dependencies, the cost model, the pairing and the reorder (interop.h).
#include "athanor/graph/interop.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <mutex>

#include "athanor/core/parallel.h"
#include "athanor/graph/passes.h"
#include "athanor/ops/attention.h"
#include "athanor/ops/conv_pool.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/linalg.h"
#include "athanor/ops/rnn_cells.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::graph {

namespace {

double value_bytes(const Value& v) {
  return static_cast<double>(numel(v.meta.shape)) * static_cast<double>(element_size(v.meta.dtype));
}

// The buffers a node reads and writes.
struct Access {
  std::vector<ValueId> reads, writes;
};

Access access_of(const Graph& g, const Node& n) {
  Access a;
  for (ValueId in : n.inputs) a.reads.push_back(g.storage_of(in));
  for (const auto& w : n.writes) a.writes.push_back(g.storage_of(w.first));
  return a;
}

bool meet(const std::vector<ValueId>& x, const std::vector<ValueId>& y) {
  for (ValueId a : x)
    if (std::find(y.begin(), y.end(), a) != y.end()) return true;
  return false;
}

bool ordered_effect(const Node& n) { return has_side_effects(n) || n.attr_source; }

}  // namespace

bool must_follow(const Graph& g, int32_t a, int32_t b) {
  const Node& na = g.nodes[static_cast<std::size_t>(a)];
  const Node& nb = g.nodes[static_cast<std::size_t>(b)];
  if (ordered_effect(na) && ordered_effect(nb)) return true;
  for (ValueId in : nb.inputs) {
    const Value& v = g.value(in);
    if (v.origin == ValueOrigin::Node && v.node == a) return true;  // a made it (or its version)
  }
  const Access x = access_of(g, na), y = access_of(g, nb);
  return meet(x.writes, y.reads) || meet(x.writes, y.writes) || meet(y.writes, x.reads);
}

bool can_pair(const Node& n) {
  return !ordered_effect(n) && n.op->kind != OpKind::View && n.write == WriteKind::None &&
         !n.outputs.empty();
}

namespace {

// self_attention's products (2 a head: q k^T, then the probabilities times v) or its
// gradient's (5: q k^T again, dy v^T, dS k, dS^T q, P^T dy), each 2 d multiply-adds per
// (query, key) pair it computes: all L^2 pairs, or the L (L + 1) / 2 a causal mask keeps.
double attention_flops(const Graph& g, const Node& n, int products) {
  const auto* a = static_cast<const SelfAttentionAttrs*>(n.attrs.get());
  const Shape& x = g.value(n.inputs.back()).meta.shape;  // the packed projection [d0, d1, 3E]
  if (x.size() != 3 || a->heads <= 0) return 0;
  const auto len = static_cast<double>(a->batch_first ? x[1] : x[0]);
  const auto batch = static_cast<double>(a->batch_first ? x[0] : x[1]);
  const double e = static_cast<double>(x[2]) / 3.0;
  const double pairs = a->causal ? len * (len + 1) / 2 : len * len;
  return products * 2.0 * pairs * e * batch;  // heads x head dim = E
}

}  // namespace

NodeWork node_work(const Graph& g, const Node& n) {
  NodeWork w;
  if (n.op->kind == OpKind::View) return w;
  for (ValueId in : n.inputs) w.bytes += value_bytes(g.value(in));
  for (ValueId out : n.outputs) w.bytes += value_bytes(g.value(out));
  if (n.op == &op_self_attention()) w.flops = attention_flops(g, n, 2);
  if (n.op == &op_self_attention_backward()) w.flops = attention_flops(g, n, 5);
  if (n.inputs.size() < 2 || n.outputs.empty()) return w;
  const Shape& x = g.value(n.inputs[0]).meta.shape;
  const Shape& wt = g.value(n.inputs[1]).meta.shape;
  const Shape& out = g.value(n.outputs[0]).meta.shape;
  const auto out_n = static_cast<double>(numel(out));
  const std::string_view op = n.op->name;
  if ((op == "mm" || op == "matmul" || op == "linear" || op == "linear_relu") && !x.empty()) {
    w.flops = 2.0 * out_n * static_cast<double>(x.back());
  } else if ((op == "convolution" || op == "convolution_relu") && wt.size() == 4 && wt[0] > 0) {
    // The side whose channels are the weight's first dimension (the output, or the input of a
    // transposed convolution) times the weight's reduction.
    const double side = out.size() > 1 && out[1] == wt[0] ? out_n : static_cast<double>(numel(x));
    w.flops = 2.0 * side * static_cast<double>(numel(wt)) / static_cast<double>(wt[0]);
  } else if (op == "convolution_backward_weight" && wt.size() == 4 && wt[1] > 0) {
    // inputs (x, grad_out): grad_weight's elements times the grad_out positions per channel
    w.flops = 2.0 * out_n * static_cast<double>(numel(wt)) / static_cast<double>(wt[1]);
  } else if (op == "addmm" && n.inputs.size() == 3 && !wt.empty()) {
    w.flops = 2.0 * out_n * static_cast<double>(wt.back());  // (bias, a, b)
  } else if ((op == "lstm_sequence" || op == "gru_sequence") && wt.size() == 2) {
    // (xg [.., gates x H], w_hh [gates x H, H]): every step's gates from h, K = H
    w.flops = 2.0 * static_cast<double>(numel(x)) * static_cast<double>(wt[1]);
  } else if (op == "lstm_sequence_backward" || op == "gru_sequence_backward") {
    // (d_output [.., H], ..., w_hh): the gates' gradient times w_hh at every step, and (unless
    // not asked for) the weight gradient, one more product of the same size
    const Shape& whh = g.value(n.inputs[op == "lstm_sequence_backward" ? 3 : 2]).meta.shape;
    const auto* a = static_cast<const RnnSequenceBackwardAttrs*>(n.attrs.get());
    if (whh.size() == 2 && whh[1] > 0) {
      const double steps_rows = static_cast<double>(numel(x)) / static_cast<double>(whh[1]);
      w.flops = (a->need_w_hh ? 2.0 : 1.0) * 2.0 * steps_rows * static_cast<double>(numel(whh));
    }
  } else if ((op == "conv_relu_max_pool" || op == "conv_relu_max_pool_indices") && wt.size() == 4 &&
             wt[0] > 0) {
    // The convolution under the pool: its outputs are the pooled ones times the window.
    const auto* a = static_cast<const ConvPoolAttrs*>(n.attrs.get());
    const double positions = out_n * static_cast<double>(a->pool[0] * a->pool[1]);
    w.flops = 2.0 * positions * static_cast<double>(numel(wt)) / static_cast<double>(wt[0]);
  } else if (op == "conv_relu_max_pool_weight_grad" && out.size() == 4 && out[0] > 0) {
    // (x, grad_pooled, ...) -> grad_weight: counted as the unfused weight gradient over every
    // convolution output, though only each window's winner contributes
    const auto* a = static_cast<const ConvPoolWeightGradAttrs*>(n.attrs.get());
    const double positions = static_cast<double>(numel(wt)) *
                             static_cast<double>(a->forward.pool[0] * a->forward.pool[1]);
    w.flops = 2.0 * positions * out_n / static_cast<double>(out[0]);
  }
  return w;
}

double node_seconds(const NodeWork& w, const InteropCosts& c, bool all_threads) {
  const double one = w.flops / c.gemm_1 + w.bytes / c.bw_1;
  // An element-wise kernel under parallel_for's grain runs on one thread anyway.
  const bool parallel = w.flops > 0 || w.bytes > 3.0 * static_cast<double>(kPointwiseGrain) * 4.0;
  if (!all_threads || !parallel) return one;
  return w.flops / c.gemm_n + w.bytes / c.bw_n + c.region;
}

double pair_seconds_together(const NodeWork& a, const NodeWork& b, const InteropCosts& c) {
  const double longer = std::max(node_seconds(a, c, false), node_seconds(b, c, false));
  const double shared = (a.flops + b.flops) / c.gemm_n + (a.bytes + b.bytes) / c.bw_n;
  return std::max(longer, shared) + c.region;
}

double pair_seconds_serial(const NodeWork& a, const NodeWork& b, const InteropCosts& c) {
  return node_seconds(a, c, true) + node_seconds(b, c, true);
}

std::vector<int32_t> InteropSchedule::paired_first() const {
  std::vector<int32_t> v;
  for (const InteropPair& p : pairs) v.push_back(p.first);
  return v;
}

double InteropSchedule::predicted_gain_s() const {
  double s = 0;
  for (const InteropPair& p : pairs) s += p.serial_s - p.together_s;
  return s;
}

std::string InteropSchedule::report(const Graph& g) const {
  std::string s = fmt::format(
      "interop schedule ({} threads): {} pairs of {} independent candidates, {} nodes moved, "
      "{} left out for the arena, predicted gain {:.1f} us per step\n"
      "  rates: GEMM {:.0f} / {:.0f} GFLOP/s, bandwidth {:.1f} / {:.1f} GB/s (one thread / all), "
      "parallel region {:.1f} us, margin {:.2f}\n",
      threads, pairs.size(), candidates, moved, refused_for_memory, predicted_gain_s() * 1e6,
      costs.gemm_1 / 1e9, costs.gemm_n / 1e9, costs.bw_1 / 1e9, costs.bw_n / 1e9,
      costs.region * 1e6, costs.margin);
  for (const InteropPair& p : pairs) {
    auto name = [&](int32_t k) {
      const Node& n = g.nodes[static_cast<std::size_t>(k)];
      return fmt::format("{} {}", n.op->name,
                         n.outputs.empty() ? "" : type_string(g.value(n.outputs[0]).meta));
    };
    s += fmt::format("  nodes {} + {}: {} | {}: serial {:.1f} us, together {:.1f} us\n", p.first,
                     p.first + 1, name(p.first), name(p.first + 1), p.serial_s * 1e6,
                     p.together_s * 1e6);
  }
  return s;
}

InteropSchedule schedule_interop(Graph& g, const InteropOptions& options) {
  InteropSchedule schedule;
  const InteropCosts& c = options.costs;
  schedule.threads = c.threads > 0 ? c.threads : get_num_threads();
  schedule.costs = c;
  if (schedule.threads < 2) return schedule;
  const auto n = static_cast<int32_t>(g.nodes.size());
  int32_t k = 0;
  while (k + 1 < n) {
    if (!can_pair(g.nodes[static_cast<std::size_t>(k)])) {
      ++k;
      continue;
    }
    const NodeWork wk = node_work(g, g.nodes[static_cast<std::size_t>(k)]);
    struct Partner {
      int32_t j = -1;
      double slack = 0, serial = 0, together = 0;
      std::vector<int32_t> before;  // nodes j depends on, moved ahead of k
    };
    std::vector<Partner> partners;  // those under the bar
    for (int32_t j = k + 1; j < n && j <= k + options.window; ++j) {
      if (!can_pair(g.nodes[static_cast<std::size_t>(j)])) continue;
      // What j depends on in (k, j), transitively; none of it may depend on k.
      std::vector<int32_t> closure{j};
      for (int32_t m = j - 1; m > k; --m) {
        for (int32_t x : closure) {
          if (must_follow(g, m, x)) {
            closure.push_back(m);
            break;
          }
        }
      }
      bool free = true;
      for (int32_t x : closure) free = free && !must_follow(g, k, x);
      if (!free) continue;
      ++schedule.candidates;
      const NodeWork wj = node_work(g, g.nodes[static_cast<std::size_t>(j)]);
      const double serial = pair_seconds_serial(wk, wj, c);
      const double together = pair_seconds_together(wk, wj, c);
      // How far under the bar the pair comes in: the partner that beats it by the most wins.
      const double slack = serial * (1.0 - c.margin) - together;
      if (slack <= 0) continue;
      std::vector<int32_t> before(closure.begin() + 1, closure.end());
      std::sort(before.begin(), before.end());
      partners.push_back({j, slack, serial, together, std::move(before)});
    }
    std::stable_sort(partners.begin(), partners.end(),
                     [](const Partner& x, const Partner& y) { return x.slack > y.slack; });
    bool paired = false;
    for (const Partner& p : partners) {
      // New order over [k, j]: what j depends on, k, j, the rest.
      std::vector<int32_t> order(static_cast<std::size_t>(n));
      for (int32_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
      auto pos = static_cast<std::size_t>(k);
      for (int32_t m : p.before) order[pos++] = m;
      const auto pair_at = static_cast<int32_t>(pos);
      order[pos++] = k;
      order[pos++] = p.j;
      for (int32_t m = k + 1; m < p.j; ++m)
        if (!std::binary_search(p.before.begin(), p.before.end(), m)) order[pos++] = m;
      if (options.max_arena > 0) {  // the plan with this pair too must still fit
        Graph trial = g;
        if (p.j != k + 1) reorder_nodes(trial, order);
        std::vector<int32_t> firsts = schedule.paired_first();
        firsts.push_back(pair_at);
        if (plan_memory(trial, firsts).arena_bytes > options.max_arena) continue;
      }
      if (p.j != k + 1) {
        reorder_nodes(g, order);
        schedule.moved += static_cast<int>(p.before.size()) + 1;
      }
      schedule.pairs.push_back({.first = pair_at, .serial_s = p.serial, .together_s = p.together});
      k = pair_at + 2;
      paired = true;
      break;
    }
    if (!paired) {
      if (!partners.empty()) ++schedule.refused_for_memory;
      ++k;
    }
  }
  return schedule;
}

void run_concurrently(const std::function<void()>& first, const std::function<void()>& second) {
  std::exception_ptr error[2];
#pragma omp parallel num_threads(2)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    for (int i = t; i < 2; i += nt) {
      try {
        (i == 0 ? first : second)();
      } catch (...) {
        error[i] = std::current_exception();
      }
    }
  }
  for (const std::exception_ptr& e : error)
    if (e) std::rethrow_exception(e);
}

InteropCosts measure_interop_costs() {
  using Clock = std::chrono::steady_clock;
  InteropCosts c;
  NoGradGuard no_grad;
  auto seconds = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto median_of = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // An empty two-thread region: on a loaded machine, mostly the wait for the second thread.
  std::vector<double> regions;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < 8; ++i) run_concurrently([] {}, [] {});
    regions.push_back(seconds(t0) / 8);
  }
  c.region = median_of(regions);
  // Each kernel on all threads, and on thread 0 of a two-thread region (as a pair runs it),
  // alternating so both see the same load. The fastest of each: the rates when nothing else
  // interferes; the load shows in the region's cost (a median) instead.
  constexpr int kCalls = 2;
  auto rates = [&](const auto& fn, double work, double& all, double& one) {
    double t_all = 1e30, t_one = 1e30;
    fn();
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      fn();
      t_all = std::min(t_all, seconds(t0));
      t0 = Clock::now();
      run_concurrently(fn, [] {});
      t_one = std::min(t_one, seconds(t0));
    }
    all = work / t_all;
    one = work / t_one;
  };
  const Tensor a = randn({256, 384}), b = randn({384, 384});
  Tensor out;
  rates(
      [&] {
        for (int i = 0; i < kCalls; ++i) out = matmul(a, b);
      },
      2.0 * 256 * 384 * 384 * kCalls, c.gemm_n, c.gemm_1);
  // In place, on 2 MB operands: larger than a core's L2, so the rate is the one multi-megabyte
  // activations see, while the calibration adds only 4 MB to the process's peak (an out-of-place
  // add on 4 MB operands made the compiled W1 and W3 runs' peak RSS 18 MB above eager's).
  constexpr int64_t kElements = int64_t{1} << 19;
  Tensor x = randn({kElements});
  const Tensor y = randn({kElements});
  rates(
      [&] {
        for (int i = 0; i < kCalls; ++i) x.add_(y);
      },
      3.0 * 4.0 * kElements * kCalls, c.bw_n, c.bw_1);
  c.threads = get_num_threads();
  return c;
}

const InteropCosts& calibrated_interop_costs() {
  static std::mutex mutex;
  static std::map<int, InteropCosts> by_threads;
  std::lock_guard<std::mutex> lock(mutex);
  const int threads = get_num_threads();
  auto it = by_threads.find(threads);
  if (it == by_threads.end()) it = by_threads.emplace(threads, measure_interop_costs()).first;
  return it->second;
}

}  // namespace ath::graph
